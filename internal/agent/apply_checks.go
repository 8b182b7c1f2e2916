package agent

import (
	"context"
	"fmt"
	"os"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// runChecks runs every check of the plan, puts all their results in the
// result, and fails with the first that did not pass.
func (r *applyRun) runChecks(ctx context.Context) error {
	for _, c := range r.plan.Checks {
		r.res.Checks = append(r.res.Checks, r.a.check(ctx, c))
	}
	for _, c := range r.res.Checks {
		if !c.OK {
			return &plan.Error{Code: plan.ErrCheckFailed, Service: c.Check.Service, File: c.Check.Path, Message: c.Message}
		}
	}
	return nil
}

// check runs one check: a service is Running, or a file exists.
func (a *Agent) check(ctx context.Context, c plan.Check) plan.CheckResult {
	r := plan.CheckResult{Check: c, OK: true}
	switch c.Type {
	case plan.CheckServiceRunning:
		_, state, err := a.Platform.Query(ctx, c.Service)
		if err != nil || state != Running {
			r.OK, r.Message = false, fmt.Sprintf("service %s is %s, not Running (%v)", c.Service, orUnknown(state), err)
		}
	case plan.CheckFileExists:
		wp, err := winpath.Parse(c.Path)
		if err == nil {
			var local string
			if local, err = a.Platform.LocalPath(wp); err == nil {
				_, err = os.Stat(local)
			}
		}
		if err != nil {
			r.OK, r.Message = false, fmt.Sprintf("file %s: %v", c.Path, err)
		}
	}
	return r
}
