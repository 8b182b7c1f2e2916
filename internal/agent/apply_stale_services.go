package agent

import (
	"context"

	"github.com/winnode/winnode/internal/plan"
)

// removeStaleServices stops and deletes the services that earlier plans
// managed and this one does not.
func (r *applyRun) removeStaleServices(ctx context.Context) error {
	var stale []plan.Service
	seen := map[string]bool{}
	for _, old := range r.previous {
		for _, s := range old.Services {
			if _, keep := r.plan.Service(s.Name); !keep && !seen[lower(s.Name)] {
				seen[lower(s.Name)] = true
				stale = append(stale, s)
			}
		}
	}
	removed, err := r.a.deleteServices(ctx, stale, r.res)
	for _, name := range removed {
		r.res.Services = append(r.res.Services, plan.ServiceResult{Name: name, Action: plan.ServiceRemoved})
	}
	return err
}
