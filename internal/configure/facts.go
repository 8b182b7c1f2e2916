package configure

import (
	"context"
	"errors"
	"fmt"
	"strings"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// agentFile is the payload's agent.
func (c *Configurer) agentFile() (payload.File, error) {
	if c.Payload == nil {
		return payload.File{}, errors.New("no payload loaded (operator flag --payload-dir)")
	}
	f, ok := c.Payload.Lookup(plan.PayloadAgent)
	if !ok {
		return payload.File{}, fmt.Errorf("the payload in %s has no %s: rebuild it with `make payload`", c.PayloadDir, plan.PayloadAgent)
	}
	return f, nil
}

// facts learns the host: `winnode-agent.exe info`, after putting the agent
// on the host when it is missing (first contact) or not the payload's
// (installed then reports true; see agentInfo). It records the host's names and addresses
// in the status, and refuses a host whose container runtime does not fit
// the instance's mode (runtime.go).
func (c *Configurer) facts(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client) (info *plan.Info, installed bool, err error) {
	agent, err := c.agentFile()
	if err != nil {
		return nil, false, stepErr(StepInfo, winnodev1.ReasonSyncFailed, err)
	}
	info, installed, err = c.agentInfo(ctx, inst, cl, agent)
	if err != nil {
		return nil, false, stepErr(StepInfo, reasonOf(err, winnodev1.ReasonApplyFailed), fmt.Errorf("learning the host's facts: %w", err))
	}
	if info.Hostname == "" {
		return nil, false, stepErr(StepInfo, winnodev1.ReasonApplyFailed, fmt.Errorf("host %s: the agent reported no hostname", inst.Spec.Address))
	}
	if info.RebootPending && rebooting(inst) {
		return nil, false, errRebooting // winnode's restart has not happened yet (reboot.go)
	}
	c.agentWarnings(inst, info.Warnings)
	inst.Status.Hostname = info.Hostname
	inst.Status.FQDN = info.FQDN
	inst.Status.Addresses = append([]string(nil), info.IPv4...)
	inst.Status.OSBuild = info.OS.Build
	inst.Status.NodeName = plan.NodeName(info.Hostname)

	if err := c.checkContainerRuntime(inst, info); err != nil {
		return nil, false, err
	}
	return info, installed, nil
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (c *Configurer) runInfo(ctx context.Context, cl *host.Client, agentPath string) (*plan.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, c.agentTimeout())
	defer cancel()
	var info plan.Info
	if err := cl.RunAgent(ctx, agentPath, []string{"info"}, nil, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// agentOutdated says whether the agent on the host is not the payload's:
// the installed plan records its hash; before any plan was applied, its
// version tells.
func agentOutdated(info *plan.Info, agent payload.File) bool {
	if info.InstalledPlan != nil {
		for path, sum := range info.InstalledPlan.Files {
			if strings.EqualFold(path, agent.HostPath) {
				return sum != agent.SHA256
			}
		}
	}
	return info.AgentVersion != agent.Version
}

func (c *Configurer) countUpload(n int64) {
	if n > 0 && c.Uploaded != nil {
		c.Uploaded(n)
	}
}

// reasonOf maps a host error to a condition reason: a lost connection is
// Unreachable whatever the step.
func reasonOf(err error, def string) string {
	var unreachable *host.UnreachableError
	if errors.As(err, &unreachable) {
		return winnodev1.ReasonUnreachable
	}
	return def
}
