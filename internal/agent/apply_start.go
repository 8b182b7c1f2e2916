package agent

import (
	"context"

	"github.com/winnode/winnode/internal/plan"
)

// startServices starts every auto-start plan service in dependency order
// (and a manual one stopChanged stopped), then any other service stopped
// there (a dependent outside the plan), waiting until each runs (and
// serves its ReadyPipe). A service that runs again only with its previous
// files (ErrRolledBack) does not stop the others: they start, and the
// apply then fails with the rollback.
func (r *applyRun) startServices(ctx context.Context) error {
	r.restarted = map[string]bool{}
	for _, n := range r.stopped {
		r.restarted[lower(n)] = true
	}
	var toStart []string
	for _, name := range r.order {
		s, _ := r.plan.Service(name)
		if s.StartType == plan.StartAuto || (r.restarted[lower(name)] && s.StartType != plan.StartDisabled) {
			toStart = append(toStart, name)
		}
	}
	for i := len(r.stopped) - 1; i >= 0; i-- {
		if _, inPlan := r.plan.Service(r.stopped[i]); !inPlan {
			toStart = append(toStart, r.stopped[i])
		}
	}
	var rolledBack error
	for _, name := range toStart {
		ready, err := r.startReady(ctx, name)
		if !ready {
			return err
		}
		if err != nil {
			rolledBack = err
		}
	}
	if rolledBack != nil {
		_ = r.reportServices(ctx)
	}
	return rolledBack
}

// reportServices adds each plan service to the result: what apply did with
// it, whether it restarted, and the state it is in now.
func (r *applyRun) reportServices(ctx context.Context) error {
	for _, name := range r.order {
		_, state, err := r.a.Platform.Query(ctx, name)
		if err != nil {
			return &plan.Error{Code: plan.ErrService, Service: name, Message: err.Error()}
		}
		r.res.Services = append(r.res.Services, plan.ServiceResult{Name: name, Action: r.decisions[lower(name)].action,
			Restarted: r.restarted[lower(name)], State: string(state)})
	}
	return nil
}
