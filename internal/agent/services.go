package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/wincmd"
)

// desiredConfig is the service manager's form of a plan service. Durations
// are rounded as Windows stores them (delays to milliseconds, the reset
// period to seconds), so a config read back compares equal.
func desiredConfig(s *plan.Service) ServiceConfig {
	c := ServiceConfig{
		Name:           s.Name,
		DisplayName:    s.DisplayName,
		Description:    s.Description,
		BinaryPathName: wincmd.Join(append([]string{s.Binary}, s.Args...)...),
		Dependencies:   s.Dependencies,
		StartType:      s.StartType,
		ResetPeriod:    s.Recovery.ResetPeriod.Truncate(time.Second),
	}
	if c.DisplayName == "" {
		c.DisplayName = s.Name
	}
	for k, v := range s.Environment {
		c.Environment = append(c.Environment, k+"="+v)
	}
	sort.Strings(c.Environment)
	for _, a := range s.Recovery.Actions {
		c.RecoveryActions = append(c.RecoveryActions, RecoveryAction{Type: a.Type, Delay: a.Delay.Truncate(time.Millisecond)})
	}
	return c
}

// configDiff names the fields that differ between the installed and the
// desired configuration ("" when equal). Names and dependencies compare
// case-insensitively, as Windows does.
func configDiff(have, want ServiceConfig) string {
	var d []string
	if have.DisplayName != want.DisplayName {
		d = append(d, "displayName")
	}
	if have.Description != want.Description {
		d = append(d, "description")
	}
	if have.BinaryPathName != want.BinaryPathName {
		d = append(d, "command line")
	}
	if !slices.Equal(foldSorted(have.Dependencies), foldSorted(want.Dependencies)) {
		d = append(d, "dependencies")
	}
	if have.StartType != want.StartType {
		d = append(d, "start type")
	}
	if !slices.Equal(sorted(have.Environment), sorted(want.Environment)) {
		d = append(d, "environment")
	}
	if !have.RecoveryUnknown && (!slices.Equal(have.RecoveryActions, want.RecoveryActions) || (len(want.RecoveryActions) > 0 && have.ResetPeriod != want.ResetPeriod)) {
		d = append(d, "recovery")
	}
	return strings.Join(d, ", ")
}

func foldSorted(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.ToLower(v)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// waitState polls a service until it reaches want, within timeout. A
// service seen Stopped while we wait for Running is waited for still: its
// recovery actions may restart it (kube-proxy exits until the kubelet has
// its certificate); the timeout error says which state it was last in.
func (a *Agent) waitState(ctx context.Context, name string, want ServiceState, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ServiceState("")
	for {
		_, st, err := a.Platform.Query(ctx, name)
		switch {
		case errors.Is(err, ErrServiceNotFound) && want == Stopped:
			return nil // deleted meanwhile
		case err != nil && ctx.Err() == nil:
			return &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("querying its state: %v", err)}
		case err == nil:
			last = st
			if st == want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return &plan.Error{Code: plan.ErrTimeout, Service: name,
				Message: fmt.Sprintf("still %s after %s, waiting for %s: look at the service's log; apply again to retry", orUnknown(last), timeout, want)}
		case <-time.After(a.pollInterval()):
		}
	}
}

func orUnknown(s ServiceState) string {
	if s == "" {
		return "unknown"
	}
	return string(s)
}

// stopTree stops a service and, first, every running service that depends
// on it (Windows refuses to stop a service others depend on). It returns
// the services it stopped, dependents first, and waits until each is
// Stopped.
func (a *Agent) stopTree(ctx context.Context, name string, stopped map[string]bool) ([]string, error) {
	if stopped[lower(name)] {
		return nil, nil
	}
	_, st, err := a.Platform.Query(ctx, name)
	if errors.Is(err, ErrServiceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrService, Service: name, Message: err.Error()}
	}
	var out []string
	deps, err := a.Platform.Dependents(ctx, name)
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("listing the services that depend on it: %v", err)}
	}
	for _, d := range deps {
		more, err := a.stopTree(ctx, d, stopped)
		out = append(out, more...)
		if err != nil {
			return out, err
		}
	}
	stopped[lower(name)] = true
	if st == Stopped {
		return out, nil
	}
	a.Log.Info("stopping service", "service", name, "state", st)
	if err := a.Platform.Stop(ctx, name); err != nil {
		return out, &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("stopping: %v", err)}
	}
	if err := a.waitState(ctx, name, Stopped, a.stopTimeout()); err != nil {
		return out, err
	}
	return append(out, name), nil
}

// startAndWait starts a service unless it runs or is starting, and waits
// until it runs (one stopping is first waited for until Stopped).
func (a *Agent) startAndWait(ctx context.Context, name string) error {
	_, state, err := a.Platform.Query(ctx, name)
	if err != nil {
		return &plan.Error{Code: plan.ErrService, Service: name, Message: err.Error()}
	}
	if state == Running {
		return nil
	}
	if state == StopPending {
		if err := a.waitState(ctx, name, Stopped, a.stopTimeout()); err != nil {
			return err
		}
	}
	if state != StartPending {
		a.Log.Info("starting service", "service", name)
		if err := a.Platform.Start(ctx, name); err != nil {
			return &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("starting: %v", err)}
		}
	}
	return a.waitState(ctx, name, Running, a.startTimeout())
}

// deleteServices stops (dependents first) and deletes services, in reverse
// dependency order; services already gone are skipped. Apply and remove
// use it, with services the agent's state names: only a service whose
// description is plan.ServiceDescription, which the agent gives every
// service it creates, is winnode's to delete. Others are left alone and
// reported in res.
func (a *Agent) deleteServices(ctx context.Context, services []plan.Service, res *plan.Result) ([]string, error) {
	order, err := plan.StartOrder(services)
	if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	var removed []string
	stopped := map[string]bool{}
	for i := len(order) - 1; i >= 0; i-- {
		name := order[i]
		cfg, _, err := a.Platform.Query(ctx, name)
		if errors.Is(err, ErrServiceNotFound) {
			continue
		}
		if err != nil {
			return removed, &plan.Error{Code: plan.ErrService, Service: name, Message: err.Error()}
		}
		if cfg.Description != plan.ServiceDescription {
			a.warn(res, fmt.Sprintf("not deleting service %s, named by the agent's state %s: its description is %q, not %q, so winnode did not create it",
				name, StateDir.Join(stateFile), cfg.Description, plan.ServiceDescription))
			continue
		}
		if _, err := a.stopTree(ctx, name, stopped); err != nil {
			return removed, err
		}
		a.Log.Info("deleting service", "service", name)
		if err := a.Platform.Delete(ctx, name); err != nil {
			return removed, &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("deleting: %v", err)}
		}
		removed = append(removed, name)
	}
	return removed, nil
}

func (a *Agent) pollInterval() time.Duration {
	if a.PollInterval > 0 {
		return a.PollInterval
	}
	return 200 * time.Millisecond
}

func (a *Agent) stopTimeout() time.Duration {
	if a.StopTimeout > 0 {
		return a.StopTimeout
	}
	return time.Minute
}

func (a *Agent) startTimeout() time.Duration {
	if a.StartTimeout > 0 {
		return a.StartTimeout
	}
	return 2 * time.Minute
}
