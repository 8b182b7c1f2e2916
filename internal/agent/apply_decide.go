package agent

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// serviceDecision is what apply does with one plan service, and why it
// restarts it ("" when it does not).
type serviceDecision struct {
	action plan.ServiceAction
	why    string
}

// decideServices compares each plan service with the service as Windows
// has it: missing → created; configured otherwise → updated; either that
// or one of its files (binary, uses) changing, or one of the files it
// writes when it starts missing → stopped, to be started again once its
// files are in place.
func (r *applyRun) decideServices(ctx context.Context) error {
	r.order, _ = plan.StartOrder(r.plan.Services) // acyclic: checked by Decode
	r.decisions = map[string]serviceDecision{}
	for _, name := range r.order {
		s, _ := r.plan.Service(name)
		d, err := r.decide(ctx, s)
		if err != nil {
			return err
		}
		if d.why != "" {
			r.toStop = append(r.toStop, s.Name)
		}
		r.decisions[lower(s.Name)] = d
	}
	return nil
}

// decide is decideServices for one service.
func (r *applyRun) decide(ctx context.Context, s *plan.Service) (serviceDecision, error) {
	have, _, err := r.a.Platform.Query(ctx, s.Name)
	switch {
	case errors.Is(err, ErrServiceNotFound):
		return serviceDecision{action: plan.ServiceCreated}, nil
	case err != nil:
		return serviceDecision{}, &plan.Error{Code: plan.ErrService, Service: s.Name, Message: err.Error()}
	}
	d := serviceDecision{action: plan.ServiceUnchanged}
	if diff := configDiff(have, desiredConfig(s)); diff != "" {
		d = serviceDecision{action: plan.ServiceUpdated, why: diff + " changed"}
	}
	for _, f := range s.Files() {
		if r.changed[lower(f)] {
			d.why = strings.TrimPrefix(d.why+"; "+f+" changed", "; ")
		}
	}
	// What the service writes when it starts is missing (deleted by
	// hand): a start writes it again.
	for _, f := range s.Writes {
		if local, err := r.a.localPath(f); err == nil {
			if _, err := os.Stat(local); errors.Is(err, os.ErrNotExist) {
				d.why = strings.TrimPrefix(d.why+"; "+f+", which it writes when it starts, is missing", "; ")
			}
		}
	}
	return d, nil
}
