package agent

import (
	"context"
	"errors"

	"github.com/winnode/winnode/internal/plan"
)

// checkHostServices fails when a service the plan needs but winnode does
// not install (containerd) is missing from the host.
func (r *applyRun) checkHostServices(ctx context.Context) error {
	for _, name := range r.plan.HostServices {
		if _, _, err := r.a.Platform.Query(ctx, name); errors.Is(err, ErrServiceNotFound) {
			return &plan.Error{Code: plan.ErrHostServiceMissing, Service: name,
				Message: "the plan needs this service, which winnode does not install: install it (e.g. containerd) and apply again"}
		} else if err != nil {
			return &plan.Error{Code: plan.ErrService, Service: name, Message: err.Error()}
		}
	}
	return nil
}
