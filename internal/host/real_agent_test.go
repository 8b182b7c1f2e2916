package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
)

// TestRealAgent drives the agent's Linux build on a simulated host the way
// the operator does: install it, ask for facts, sync a plan's files to the
// staging folder, apply, and sync again (nothing moves).
func TestRealAgent(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	ctx := context.Background()

	agent := installAgent(t, c)

	var info plan.Info
	if err := c.RunAgent(ctx, agent, []string{"info"}, nil, &info); err != nil {
		t.Fatalf("agent info: %v", err)
	}
	if !strings.EqualFold(info.Hostname, h.Hostname()) || info.InstalledPlan != nil {
		t.Fatalf("agent info = %+v, want hostname %s and nothing installed", info, h.Hostname())
	}

	tool := localFile(t, `C:\k\bin\tool.exe`, 1<<20)
	conf := content(`C:\k\etc\tool.conf`, "setting: 1\n")
	p := plan.Plan{
		SchemaVersion: plan.SchemaVersion,
		Version:       "test-1",
		Directories:   []plan.Directory{{Path: `C:\k\bin`}, {Path: `C:\k\etc`}},
		Files: []plan.File{
			{Path: tool.HostPath, SHA256: tool.SHA256, Size: tool.Size},
			{Path: conf.HostPath, SHA256: conf.SHA256, Size: conf.Size},
		},
	}
	planJSON, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	apply := func() (plan.Result, error) {
		var res plan.Result
		err := c.RunAgent(ctx, agent, []string{"apply", "--plan", "-"}, bytes.NewReader(planJSON), &res)
		return res, err
	}

	// Before the sync the agent refuses: the files are not staged.
	_, err = apply()
	var pe *plan.Error
	if !errors.As(err, &pe) || pe.Code != plan.ErrFileMissing {
		t.Fatalf("apply before sync: %v, want the agent's %s error", err, plan.ErrFileMissing)
	}

	files := []LocalFile{tool, conf}
	res, err := c.Sync(ctx, files, nil, plan.DefaultStagingDir, nil)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if res.BytesUploaded != tool.Size+conf.Size {
		t.Errorf("Sync = %+v, want %d bytes", res, tool.Size+conf.Size)
	}
	result, err := apply()
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	for _, f := range files {
		got, err := os.ReadFile(must(h.Path(f.HostPath)))
		if err != nil || !bytes.Equal(got, localContent(t, f)) {
			t.Errorf("%s after apply: %v (result %+v)", f.HostPath, err, result)
		}
	}

	if err := c.RunAgent(ctx, agent, []string{"info"}, nil, &info); err != nil {
		t.Fatalf("agent info after apply: %v", err)
	}
	if info.InstalledPlan == nil {
		t.Fatalf("agent info after apply reports no installed plan: %+v", info)
	}
	res, err = c.Sync(ctx, files, info.InstalledPlan.Files, plan.DefaultStagingDir, nil)
	if err != nil {
		t.Fatalf("second Sync: %v", err)
	}
	if res.BytesUploaded != 0 || res.FilesSkipped != 2 {
		t.Errorf("second Sync = %+v, want nothing moved (installed files: %v)", res, info.InstalledPlan.Files)
	}
}

// installAgent installs the agent's Linux build on the simulated host as
// the operator does, and returns its host path.
func installAgent(t testing.TB, c *Client) string {
	t.Helper()
	bin := testenv.Binary(t, "cmd/winnode-agent")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	const agent = `C:\k\winnode-agent.exe`
	if _, err := c.Install(context.Background(), LocalFile{LocalPath: bin, HostPath: agent, SHA256: sum(data), Size: int64(len(data))}, nil); err != nil {
		t.Fatalf("Install the agent: %v", err)
	}
	return agent
}
