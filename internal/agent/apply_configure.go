package agent

import (
	"context"
	"fmt"

	"github.com/winnode/winnode/internal/plan"
)

// configureServices creates the services decideServices found missing and
// reconfigures those it found configured otherwise, in dependency order.
func (r *applyRun) configureServices(ctx context.Context) error {
	for _, name := range r.order {
		s, _ := r.plan.Service(name)
		want := desiredConfig(s)
		switch r.decisions[lower(name)].action {
		case plan.ServiceCreated:
			r.a.Log.Info("creating service", "service", name)
			if err := r.a.Platform.Create(ctx, want); err != nil {
				return &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("creating: %v", err)}
			}
		case plan.ServiceUpdated:
			r.a.Log.Info("reconfiguring service", "service", name)
			if err := r.a.Platform.Update(ctx, want); err != nil {
				return &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("reconfiguring: %v", err)}
			}
		}
	}
	return nil
}
