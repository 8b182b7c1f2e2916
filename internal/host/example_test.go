package host_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/plan"
)

// The operator's path through one host: connect (trusting the host key on
// first use), learn the host, upload what it lacks, apply.
func Example() {
	ctx := context.Background()
	var signer ssh.Signer // from Secret cloud-private-key
	pinned := ""          // from the WindowsInstance's status; empty the first time

	c, err := host.Connect(ctx, host.Options{Address: "10.0.0.5", User: "Administrator", Signer: signer, PinnedHostKey: pinned})
	var mismatch *host.HostKeyMismatchError
	var unreachable *host.UnreachableError
	switch {
	case errors.As(err, &mismatch):
		fmt.Println("condition HostKeyMismatch:", mismatch.PresentedFingerprint)
		return
	case errors.As(err, &unreachable):
		fmt.Println("condition Reachable=False:", err)
		return
	case err != nil:
		fmt.Println(err) // *host.AuthError: wrong private key
		return
	}
	defer c.Close()
	pinned = c.HostKey() // persist it

	const agent = `C:\k\winnode-agent.exe`
	var info plan.Info
	if err := c.RunAgent(ctx, agent, []string{"info"}, nil, &info); err != nil {
		var missing *host.ProgramNotFoundError
		if errors.As(err, &missing) {
			// c.Install(ctx, host.LocalFile{LocalPath: ..., HostPath: agent, ...}, nil), then again
		}
		return
	}
	var installed map[string]string
	if info.InstalledPlan != nil {
		installed = info.InstalledPlan.Files
	}
	files := []host.LocalFile{ /* the plan's files */ }
	res, err := c.Sync(ctx, files, installed, plan.DefaultStagingDir, func(p host.Progress) {})
	if err != nil {
		return
	}
	fmt.Println("uploaded", res.BytesUploaded, "bytes")

	var planJSON []byte // the rendered plan, handed over on stdin
	var result plan.Result
	err = c.RunAgent(ctx, agent, []string{"apply", "--plan", "-"}, bytes.NewReader(planJSON), &result)
	var agentErr *plan.Error
	if errors.As(err, &agentErr) {
		fmt.Println("the agent failed:", agentErr.Code)
	}
}
