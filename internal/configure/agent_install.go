package configure

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// Putting the agent on a host without ever running what a local user could
// have planted (issue 11, "What runs as Administrator"; docs/trust.md).
//
// Windows' default ACL of C:\ lets any local user create C:\k, and what an
// administrator creates there inherits "Authenticated Users: Modify": until
// the agent has secured it, C:\k may hold a winnode-agent.exe (or a DLL
// beside it) that is not winnode's. So the operator runs the agent from
// C:\k only once an earlier run recorded that it secured the folder and
// placed itself there (status.agentSecured). Until then, and whenever the
// agent is found missing, the agent is uploaded to the SSH user's profile
// folder, which only administrators write, and run from there with
// `install`: it secures winnode's folders (refusing UntrustedFolder), copies
// itself into C:\k and reports the host's facts, in one exec.

// agentInfo runs `info`, installing the agent first as above when it is
// not known to be secured, missing, or not the payload's.
// Both run the pre-flight checks of req (preflight.go) in the same exec.
func (c *Configurer) agentInfo(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, agent payload.File, req *plan.PreflightRequest) (*plan.Info, bool, error) {
	if inst.Status.AgentSecured {
		info, err := c.runInfo(ctx, cl, agent.HostPath, req)
		var notFound *host.ProgramNotFoundError
		switch {
		case errors.As(err, &notFound):
			// Gone (deleted by hand, say): whoever made C:\k again is
			// unknown, so the first run is repeated.
			inst.Status.AgentSecured = false
		case knowsNoPreflight(err) || (err == nil && agentOutdated(info, agent)):
			// An agent that refuses --preflight is older than the
			// payload's. C:\k is secured: only administrators can write
			// there.
			if err := c.upload(ctx, inst, cl, agent, agent.HostPath); err != nil {
				return nil, false, err
			}
			info, err = c.runInfo(ctx, cl, agent.HostPath, req)
			return info, true, err
		default:
			return info, false, err
		}
	}
	info, err := c.firstRun(ctx, inst, cl, agent, req)
	return info, err == nil, err
}

// knowsNoPreflight says whether err is an agent's refusal of the
// --preflight flag: an agent from before the pre-flight checks.
func knowsNoPreflight(err error) bool {
	var ae *host.AgentError
	return errors.As(err, &ae) && ae.Err.Code == plan.ErrUsage && strings.Contains(ae.Err.Message, "--preflight")
}

// firstRun uploads the agent to the profile folder, runs `install` there
// and deletes that copy again.
func (c *Configurer) firstRun(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, agent payload.File, req *plan.PreflightRequest) (*plan.Info, error) {
	var info plan.Info
	err := c.withAgentInProfile(ctx, inst, cl, agent, func(path string) error {
		ctx, cancel := context.WithTimeout(ctx, c.agentTimeout())
		defer cancel()
		args, stdin := preflightArgs([]string{"install", "--to", agent.HostPath}, req)
		return cl.RunAgent(ctx, path, args, stdin, &info)
	})
	if err != nil {
		return nil, err
	}
	inst.Status.AgentSecured = true
	c.Log.Info("the agent secured winnode's folders and installed itself", "instance", inst.Name, "path", agent.HostPath)
	return &info, nil
}

// withAgentInProfile uploads the payload's agent to the SSH user's profile
// folder, runs do with its path there, and deletes it afterwards (best
// effort: the next upload replaces it anyway).
func (c *Configurer) withAgentInProfile(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, agent payload.File, do func(path string) error) error {
	home, err := cl.HomeDir(ctx)
	if err != nil {
		return stepErr(StepInfo, reasonOf(err, winnodev1.ReasonSyncFailed), fmt.Errorf("finding the SSH user's profile folder to run the agent from: %w", err))
	}
	path := home.Join(plan.PayloadAgent).String()
	if err := host.CheckArgs(path); err != nil {
		return stepErr(StepInfo, winnodev1.ReasonSyncFailed, fmt.Errorf("the agent cannot be run from the SSH user's profile folder %s (docs/trust.md): %w", home, err))
	}
	if err := c.upload(ctx, inst, cl, agent, path); err != nil {
		return err
	}
	defer func() {
		if err := cl.RemoveFile(ctx, path); err != nil {
			c.Log.Info("could not delete the agent's copy in the profile folder", "instance", inst.Name, "path", path, "error", err.Error())
		}
	}()
	return do(path)
}

// upload copies the payload's agent to path on the host.
func (c *Configurer) upload(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, agent payload.File, path string) error {
	ctx, cancel := context.WithTimeout(ctx, c.syncTimeout())
	defer cancel()
	var progress func(host.Progress)
	if c.Progress != nil {
		progress = func(p host.Progress) { c.Progress(inst, p) }
	}
	n, err := cl.Install(ctx, host.LocalFile{
		LocalPath: filepath.Join(c.PayloadDir, agent.Name),
		HostPath:  path,
		SHA256:    agent.SHA256,
		Size:      agent.Size,
	}, progress)
	c.countUpload(n)
	if err != nil {
		return stepErr(StepInfo, reasonOf(err, winnodev1.ReasonSyncFailed), fmt.Errorf("installing the agent %s: %w", path, err))
	}
	c.Log.Info("uploaded the agent to the host", "instance", inst.Name, "path", path, "bytes", n)
	return nil
}
