package configure

import (
	"context"
	"fmt"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/hosttext"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/preflight"
)

// Check runs the pre-flight checks on the instance's host without
// configuring anything (winnodectl check): it connects as step connect
// does, uploads the payload's agent to the SSH user's profile folder, runs
// `info --preflight` from there (read-only: info installs nothing) and
// deletes that copy, then adds the operator's checks. Skipped checks
// (SkipPreflight) are left out.
func (c *Configurer) Check(ctx context.Context, inst *winnodev1.WindowsInstance) ([]plan.PreflightResult, error) {
	agent, err := c.agentFile()
	if err != nil {
		return nil, err
	}
	cl, err := c.connect(ctx, inst)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := c.preflightRequest(ctx, inst)
	var info plan.Info
	err = c.withAgentInProfile(ctx, inst, cl, agent, func(path string) error {
		ctx, cancel := context.WithTimeout(ctx, c.agentTimeout())
		defer cancel()
		args, stdin := preflightArgs([]string{"info"}, req)
		return cl.RunAgent(ctx, path, args, stdin, &info)
	})
	if err != nil {
		return nil, fmt.Errorf("running the agent's pre-flight checks on %s: %w", inst.Spec.Address, err)
	}
	if err := checkReport(&info); err != nil {
		return nil, fmt.Errorf("host %s: %w", inst.Spec.Address, err)
	}
	results := append(c.hostPreflight(inst, &info), c.operatorPreflight(ctx, inst, &info)...)
	kept, _ := preflight.Skip(preflight.Sort(results), c.SkipPreflight)
	for i := range kept { // what the host wrote is shown as text only
		kept[i].Check, kept[i].Message = hosttext.Clean(kept[i].Check), hosttext.Clean(kept[i].Message)
	}
	return kept, nil
}
