package agent

import (
	"context"
	"slices"

	"github.com/winnode/winnode/internal/plan"
)

// Apply makes the host match the plan, idempotently, and reports what it
// did. On failure the returned Result holds what was done so far, and the
// error is a *plan.Error. Apply is safe to repeat after a crash at any point:
// the plan is recorded as pending before anything changes, so services and
// files it created are still known as winnode's.
//
// The steps are listed, in order, in apply below; each is a method of
// applyRun in the file named for it (apply_<step>.go).
func (a *Agent) Apply(ctx context.Context, p *plan.Plan) (*plan.Result, error) {
	// Before the lock and the state file: they live in a root (secure.go).
	if err := a.secureFolders(ctx, append(slices.Clone(plan.Roots), p.Roots()...), p.Staging()); err != nil {
		return newResult("apply", p.Version), err
	}
	unlock, err := a.lock()
	if err != nil {
		return newResult("apply", p.Version), err
	}
	defer unlock()
	return a.apply(ctx, p)
}

// apply is Apply with the lock held: the steps of an apply, in order. The
// first error ends it; the result then holds what was done so far.
func (a *Agent) apply(ctx context.Context, p *plan.Plan) (*plan.Result, error) {
	r := &applyRun{a: a, plan: p, res: newResult("apply", p.Version)}
	steps := []func(context.Context) error{
		r.recordPending,         // apply_state.go: the plan is pending before anything changes
		r.checkHostServices,     // apply_host_services.go: containerd and the like exist
		r.enableFeatures,        // apply_features.go: Containers; a restart needed stops here (RebootRequired)
		r.makeDirectories,       // apply_directories.go
		r.findFiles,             // apply_find_files.go: each file in place or staged, else fail before stopping anything
		r.removeStaleServices,   // apply_stale_services.go: services earlier plans had and this one drops
		r.decideServices,        // apply_decide.go: create, reconfigure, restart or leave each service
		r.noticeClusterChange,   // apply_cluster.go: a host moving to another cluster restarts everything
		r.stopChanged,           // apply_stop.go: dependents first
		r.dropOldCredentials,    // apply_cluster.go: what the kubelet wrote in the old cluster
		r.placeFiles,            // apply_place_files.go: staged blobs moved into place
		r.trustRootCertificates, // apply_trust.go: the plan's CAs in LocalMachine\Root
		r.configureServices,     // apply_configure.go: create and reconfigure
		r.excludeFromDefender,   // apply_defender.go: winnode's programs, where Defender runs
		r.startServices,         // apply_start.go: in dependency order, waiting until each runs
		r.reportServices,        // apply_start.go: each service's final state in the result
		r.openFirewall,          // apply_firewall.go: open the plan's ports, close dropped ones
		r.removeStaleFiles,      // apply_stale_files.go: files earlier plans had and this one drops
		r.runChecks,             // apply_checks.go
		r.recordApplied,         // apply_state.go: the plan is applied; consumed blobs deleted
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return r.res, err
		}
	}
	return r.res, nil
}

// applyRun is one apply under way: the plan, the agent's state, the result
// so far, and what each step learns for the steps after it. Maps of names
// and paths are keyed in lower case, as Windows compares them.
type applyRun struct {
	a    *Agent
	plan *plan.Plan
	res  *plan.Result

	st       *State       // recordPending: loaded, and saved by the steps that change it
	previous []*plan.Plan // recordPending: the plans managed before this apply
	roots    []string     // recordPending: where paths previous names may be deleted

	files   []fileStep      // findFiles: every plan file, in place or from a staged blob
	changed map[string]bool // findFiles: the files this apply replaces

	order        []string                   // decideServices: plan services in dependency order
	decisions    map[string]serviceDecision // decideServices: what each plan service needs
	toStop       []string                   // decideServices: services to stop, in start order
	otherCluster bool                       // noticeClusterChange: the plan is of another cluster

	stopped   []string            // stopChanged: services it stopped, in stop order
	kept      map[string]keptFile // placeFiles: previous versions of Rollback files (apply_rollback.go)
	restarted map[string]bool     // startServices: the services stopChanged stopped
}

// newResult is an empty result of a command, with lists that encode as []
// rather than null.
func newResult(command, planVersion string) *plan.Result {
	return &plan.Result{SchemaVersion: plan.SchemaVersion, Command: command, PlanVersion: planVersion,
		Services: []plan.ServiceResult{}, Files: []plan.FileResult{}}
}
