package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// Apply makes the host match the plan, idempotently, and reports what it
// did. On failure the returned Result holds what was done so far, and the
// error is a *plan.Error. Apply is safe to repeat after a crash at any point:
// the plan is recorded as pending before anything changes, so services and
// files it created are still known as winnode's.
//
// The steps, in order: record the plan as pending; check the host services
// it needs; create folders; find each file in place or staged (or fail
// naming it, before anything is stopped); delete services the previous plan
// managed and this one does not; stop the services whose configuration or
// files change (dependents first); move staged files into place; create and
// reconfigure services; start every auto-start service in dependency order
// and wait until each runs; open firewall ports; delete files no longer in
// the plan; run the checks; record the plan as applied and delete consumed
// staging blobs.
func (a *Agent) Apply(ctx context.Context, p *plan.Plan) (*plan.Result, error) {
	unlock, err := a.lock()
	if err != nil {
		return &plan.Result{SchemaVersion: plan.SchemaVersion, Command: "apply", PlanVersion: p.Version,
			Services: []plan.ServiceResult{}, Files: []plan.FileResult{}}, err
	}
	defer unlock()
	return a.apply(ctx, p)
}

// apply is Apply with the lock held.
func (a *Agent) apply(ctx context.Context, p *plan.Plan) (*plan.Result, error) {
	res := &plan.Result{SchemaVersion: plan.SchemaVersion, Command: "apply", PlanVersion: p.Version,
		Services: []plan.ServiceResult{}, Files: []plan.FileResult{}}
	st, err := a.loadState()
	if err != nil {
		return res, plan.AsError(err, plan.ErrHost)
	}
	previous := st.plans()

	// Record the plan before changing anything; forget manifest entries the
	// plan is about to change.
	st.Pending = p
	for _, f := range p.Files {
		if h, ok := st.Manifest[f.Path]; ok && h != f.SHA256 {
			delete(st.Manifest, f.Path)
		}
	}
	if err := a.saveState(st); err != nil {
		return res, plan.AsError(err, plan.ErrHost)
	}

	for _, name := range p.HostServices {
		if _, _, err := a.Platform.Query(ctx, name); errors.Is(err, ErrServiceNotFound) {
			return res, &plan.Error{Code: plan.ErrHostServiceMissing, Service: name,
				Message: "the plan needs this service, which winnode does not install: install it (e.g. containerd) and apply again"}
		} else if err != nil {
			return res, &plan.Error{Code: plan.ErrService, Service: name, Message: err.Error()}
		}
	}

	for _, d := range p.Directories {
		if err := a.mkdir(d.Path); err != nil {
			return res, err
		}
	}

	steps, err := a.planFiles(p)
	if err != nil {
		// A file the manifest lists but that is not in place any more (a
		// change on the host) leaves the manifest, so that the operator's
		// next sync uploads it.
		var e *plan.Error
		if errors.As(err, &e) && e.Code == plan.ErrFileMissing {
			inPlace := map[string]bool{}
			for _, s := range steps {
				inPlace[lower(s.file.Path)] = true
			}
			for _, f := range p.Files {
				if !inPlace[lower(f.Path)] {
					delete(st.Manifest, f.Path)
				}
			}
			if serr := a.saveState(st); serr != nil {
				a.Log.Warn("could not save the agent's state", "err", serr)
			}
		}
		return res, err
	}
	changed := map[string]bool{}
	for _, s := range steps {
		if s.blob != "" {
			changed[lower(s.file.Path)] = true
		}
	}

	// Services the previous plans managed and this one does not.
	if err := a.removeStale(ctx, p, previous, res); err != nil {
		return res, err
	}

	// Decide what each service needs.
	order, _ := plan.StartOrder(p.Services) // acyclic: checked by Decode
	type decision struct {
		action plan.ServiceAction
		why    string
	}
	decisions := map[string]decision{}
	var toStop []string
	for _, name := range order {
		s, _ := p.Service(name)
		have, _, err := a.Platform.Query(ctx, s.Name)
		var d decision
		switch {
		case errors.Is(err, ErrServiceNotFound):
			d = decision{action: plan.ServiceCreated}
		case err != nil:
			return res, &plan.Error{Code: plan.ErrService, Service: s.Name, Message: err.Error()}
		default:
			d = decision{action: plan.ServiceUnchanged}
			if diff := configDiff(have, desiredConfig(s)); diff != "" {
				d = decision{action: plan.ServiceUpdated, why: diff + " changed"}
			}
			for _, f := range s.Files() {
				if changed[lower(f)] {
					d.why = strings.TrimPrefix(d.why+"; "+f+" changed", "; ")
				}
			}
			if d.why != "" {
				toStop = append(toStop, s.Name)
			}
		}
		decisions[lower(s.Name)] = d
	}

	// A host listed in another cluster: what its kubelet wrote when it
	// joined the old cluster (kubeconfig, certificates) would keep it there.
	// Every service restarts without it.
	dropCredentials := st.Applied != nil && st.Applied.Cluster != "" && p.Cluster != "" && st.Applied.Cluster != p.Cluster
	if dropCredentials {
		a.Log.Info("the host joins another cluster: dropping the old cluster's credentials", "from", st.Applied.Cluster, "to", p.Cluster)
		toStop = toStop[:0]
		for _, name := range order {
			d := decisions[lower(name)]
			if d.action == plan.ServiceCreated {
				continue
			}
			d.why = strings.TrimPrefix(d.why+"; the cluster changed", "; ")
			decisions[lower(name)] = d
			toStop = append(toStop, name)
		}
	}

	// Stop what changes, dependents first.
	stopped := map[string]bool{}
	var restart []string // services stopped here, in stop order
	for i := len(toStop) - 1; i >= 0; i-- {
		a.Log.Info("service changes", "service", toStop[i], "why", decisions[lower(toStop[i])].why)
		more, err := a.stopTree(ctx, toStop[i], stopped)
		restart = append(restart, more...)
		if err != nil {
			return res, err
		}
	}

	if dropCredentials {
		for _, c := range p.ClusterCredentials {
			local, err := a.localPath(c)
			if err != nil {
				return res, err
			}
			if err := a.retryFile(func() error { return os.RemoveAll(local) }); err != nil {
				return res, &plan.Error{Code: plan.ErrFileInstall, File: c, Message: fmt.Sprintf("deleting the old cluster's credentials: %v", err)}
			}
		}
	}

	// Files.
	blobUses := map[string]int{}
	for _, s := range steps {
		if s.blob != "" {
			blobUses[s.blob]++
		}
	}
	for _, s := range steps {
		action := plan.FileUnchanged
		if s.blob != "" {
			blobUses[s.blob]--
			a.Log.Info("installing file", "file", s.file.Path, "sha256", s.file.SHA256)
			stillNeeded := blobUses[s.blob] > 0
			if err := a.retryFile(func() error { return install(s, stillNeeded) }); err != nil {
				return res, &plan.Error{Code: plan.ErrFileInstall, File: s.file.Path, Message: fmt.Sprintf("moving the staged blob into place: %v", err)}
			}
			action = plan.FileInstalled
		}
		st.Manifest[s.file.Path] = s.file.SHA256
		res.Files = append(res.Files, plan.FileResult{Path: s.file.Path, Action: action})
	}
	if err := a.saveState(st); err != nil {
		return res, plan.AsError(err, plan.ErrHost)
	}

	// Create and reconfigure.
	for _, name := range order {
		s, _ := p.Service(name)
		want := desiredConfig(s)
		switch decisions[lower(name)].action {
		case plan.ServiceCreated:
			a.Log.Info("creating service", "service", name)
			if err := a.Platform.Create(ctx, want); err != nil {
				return res, &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("creating: %v", err)}
			}
		case plan.ServiceUpdated:
			a.Log.Info("reconfiguring service", "service", name)
			if err := a.Platform.Update(ctx, want); err != nil {
				return res, &plan.Error{Code: plan.ErrService, Service: name, Message: fmt.Sprintf("reconfiguring: %v", err)}
			}
		}
	}

	// Start: every auto-start plan service in dependency order, then any
	// other service stopped above (a dependent outside the plan).
	wasStopped := map[string]bool{}
	for _, n := range restart {
		wasStopped[lower(n)] = true
	}
	var toStart []string
	for _, name := range order {
		s, _ := p.Service(name)
		if s.StartType == plan.StartAuto || (wasStopped[lower(name)] && s.StartType != plan.StartDisabled) {
			toStart = append(toStart, name)
		}
	}
	for i := len(restart) - 1; i >= 0; i-- {
		if _, inPlan := p.Service(restart[i]); !inPlan {
			toStart = append(toStart, restart[i])
		}
	}
	for _, name := range toStart {
		if err := a.startAndWait(ctx, name); err != nil {
			return res, err
		}
	}

	for _, name := range order {
		_, state, err := a.Platform.Query(ctx, name)
		if err != nil {
			return res, &plan.Error{Code: plan.ErrService, Service: name, Message: err.Error()}
		}
		res.Services = append(res.Services, plan.ServiceResult{Name: name, Action: decisions[lower(name)].action,
			Restarted: wasStopped[lower(name)], State: string(state)})
	}

	if err := a.applyFirewall(ctx, p, previous); err != nil {
		return res, err
	}
	if err := a.removeStaleFiles(p, previous, st, res); err != nil {
		return res, err
	}

	res.Checks = a.runChecks(ctx, p)
	for _, c := range res.Checks {
		if !c.OK {
			return res, &plan.Error{Code: plan.ErrCheckFailed, Service: c.Check.Service, File: c.Check.Path, Message: c.Message}
		}
	}

	st.Applied, st.Pending = p, nil
	if err := a.saveState(st); err != nil {
		return res, plan.AsError(err, plan.ErrHost)
	}
	a.cleanStaging(p)
	return res, nil
}

func (a *Agent) mkdir(path string) error {
	wp, err := winpath.Parse(path)
	if err == nil {
		var local string
		if local, err = a.Platform.LocalPath(wp); err == nil {
			err = os.MkdirAll(local, 0o755)
		}
	}
	if err != nil {
		return &plan.Error{Code: plan.ErrFileInstall, File: path, Message: fmt.Sprintf("creating the folder: %v", err)}
	}
	return nil
}

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

// removeStale stops and deletes the services that earlier plans managed and
// this one does not.
func (a *Agent) removeStale(ctx context.Context, p *plan.Plan, previous []*plan.Plan, res *plan.Result) error {
	var stale []plan.Service
	seen := map[string]bool{}
	for _, old := range previous {
		for _, s := range old.Services {
			if _, keep := p.Service(s.Name); !keep && !seen[lower(s.Name)] {
				seen[lower(s.Name)] = true
				stale = append(stale, s)
			}
		}
	}
	removed, err := a.deleteServices(ctx, stale)
	for _, name := range removed {
		res.Services = append(res.Services, plan.ServiceResult{Name: name, Action: plan.ServiceRemoved})
	}
	return err
}

// deleteServices stops (dependents first) and deletes services, in reverse
// dependency order; services already gone are skipped.
func (a *Agent) deleteServices(ctx context.Context, services []plan.Service) ([]string, error) {
	order, err := plan.StartOrder(services)
	if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	var removed []string
	stopped := map[string]bool{}
	for i := len(order) - 1; i >= 0; i-- {
		name := order[i]
		if _, _, err := a.Platform.Query(ctx, name); errors.Is(err, ErrServiceNotFound) {
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

func (a *Agent) applyFirewall(ctx context.Context, p *plan.Plan, previous []*plan.Plan) error {
	want := map[string]bool{}
	for _, fw := range p.FirewallPorts {
		want[fw.Name] = true
		if err := a.Platform.OpenFirewallPort(ctx, fw); err != nil {
			return &plan.Error{Code: plan.ErrFirewall, Message: fmt.Sprintf("opening %s port %d (%s): %v", fw.Protocol, fw.Port, fw.Name, err)}
		}
	}
	for _, old := range previous {
		for _, fw := range old.FirewallPorts {
			if !want[fw.Name] {
				if err := a.Platform.CloseFirewallPort(ctx, fw); err != nil {
					return &plan.Error{Code: plan.ErrFirewall, Message: fmt.Sprintf("closing %s port %d (%s): %v", fw.Protocol, fw.Port, fw.Name, err)}
				}
			}
		}
	}
	return nil
}

// removeStaleFiles deletes files earlier plans installed and this one does
// not name.
func (a *Agent) removeStaleFiles(p *plan.Plan, previous []*plan.Plan, st *State, res *plan.Result) error {
	keep := map[string]bool{}
	for _, f := range p.Files {
		keep[lower(f.Path)] = true
	}
	for _, old := range previous {
		for _, f := range old.Files {
			if keep[lower(f.Path)] {
				continue
			}
			keep[lower(f.Path)] = true // once
			if err := a.removeFile(f.Path); err != nil {
				return err
			}
			delete(st.Manifest, f.Path)
			res.Files = append(res.Files, plan.FileResult{Path: f.Path, Action: plan.FileRemoved})
		}
	}
	return nil
}

func (a *Agent) removeFile(path string) error {
	wp, err := winpath.Parse(path)
	if err == nil {
		var local string
		if local, err = a.Platform.LocalPath(wp); err == nil {
			err = a.retryFile(func() error { return os.Remove(local) })
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return &plan.Error{Code: plan.ErrFileInstall, File: path, Message: fmt.Sprintf("deleting: %v", err)}
	}
	return nil
}

func (a *Agent) runChecks(ctx context.Context, p *plan.Plan) []plan.CheckResult {
	var out []plan.CheckResult
	for _, c := range p.Checks {
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
		out = append(out, r)
	}
	return out
}

// cleanStaging deletes the staged blobs of plan files, and the staging
// folder when nothing else is in it. Failures only cost disk space, so they
// are logged, not returned.
func (a *Agent) cleanStaging(p *plan.Plan) {
	staging, err := winpath.Parse(p.Staging())
	if err != nil {
		return
	}
	for _, f := range p.Files {
		if local, err := a.Platform.LocalPath(staging.Join(f.SHA256)); err == nil {
			if err := os.Remove(local); err != nil && !errors.Is(err, os.ErrNotExist) {
				a.Log.Warn("could not delete a consumed staging blob", "blob", staging.Join(f.SHA256).String(), "err", err)
			}
		}
	}
	if local, err := a.Platform.LocalPath(staging); err == nil {
		os.Remove(local) // only succeeds when empty
	}
}
