package agent

import (
	"context"
	"fmt"

	"github.com/winnode/winnode/internal/plan"
)

// openFirewall opens the plan's ports and closes those earlier plans
// opened and this one drops (ports are known by name).
func (r *applyRun) openFirewall(ctx context.Context) error {
	want := map[string]bool{}
	for _, fw := range r.plan.FirewallPorts {
		want[fw.Name] = true
		if err := r.a.Platform.OpenFirewallPort(ctx, fw); err != nil {
			return &plan.Error{Code: plan.ErrFirewall, Message: fmt.Sprintf("opening %s port %d (%s): %v", fw.Protocol, fw.Port, fw.Name, err)}
		}
	}
	for _, old := range r.previous {
		for _, fw := range old.FirewallPorts {
			if !want[fw.Name] {
				if err := r.a.closeFirewallPort(ctx, fw); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// closeFirewallPort removes a port's rule (remove uses it too).
func (a *Agent) closeFirewallPort(ctx context.Context, fw plan.FirewallPort) error {
	if err := a.Platform.CloseFirewallPort(ctx, fw); err != nil {
		return &plan.Error{Code: plan.ErrFirewall, Message: fmt.Sprintf("closing %s port %d (%s): %v", fw.Protocol, fw.Port, fw.Name, err)}
	}
	return nil
}
