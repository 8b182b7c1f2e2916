package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/winnode/winnode/internal/plan"
)

// A service whose plan names Rollback files (containerd's programs) is
// upgraded so that a failed start costs nothing: placeFiles keeps each such
// file's previous version beside it (<file>.previous) before replacing it,
// and startServices waits until the service serves its ReadyPipe. When it
// does not, rollBack stops it, puts the previous files back and starts it
// again; the apply then fails with ErrRolledBack, the other services
// started as before. Once the new files run, the kept ones are deleted.

// previousSuffix names the previous version of a Rollback file.
const previousSuffix = ".previous"

// keptFile is a Rollback file's previous version, kept by placeFiles.
type keptFile struct {
	path, local, previous, sha256 string
}

// keepPrevious keeps the file a staged blob is about to replace, when a
// service may need it back (its Rollback names it).
func (r *applyRun) keepPrevious(step fileStep) error {
	if !r.rollbackFile(step.file.Path) {
		return nil
	}
	sum, err := hashFile(step.local)
	if err != nil || sum == "" {
		return err // nothing there to keep
	}
	prev := step.local + previousSuffix
	_ = os.Remove(prev)
	if err := r.a.retryFile(func() error { return copyFile(step.local, prev) }); err != nil {
		return &plan.Error{Code: plan.ErrFileInstall, File: step.file.Path, Message: fmt.Sprintf("keeping the previous version: %v", err)}
	}
	if r.kept == nil {
		r.kept = map[string]keptFile{}
	}
	r.kept[lower(step.file.Path)] = keptFile{path: step.file.Path, local: step.local, previous: prev, sha256: sum}
	return nil
}

// rollbackFile says whether a plan service may need this file back.
func (r *applyRun) rollbackFile(path string) bool {
	for _, s := range r.plan.Services {
		if containsFold(s.Rollback, path) {
			return true
		}
	}
	return false
}

// awaitReady waits until a started service with a ReadyPipe serves it: a
// service that stops meanwhile, or that does not serve it within the
// start timeout, failed to start.
func (a *Agent) awaitReady(ctx context.Context, s *plan.Service) error {
	if s.ReadyPipe == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.startTimeout())
	defer cancel()
	for {
		err := a.Platform.PipeAnswers(ctx, s.ReadyPipe)
		if err == nil {
			return nil
		}
		_, state, qerr := a.Platform.Query(ctx, s.Name)
		if qerr == nil && (state == Stopped || state == StopPending) {
			return &plan.Error{Code: plan.ErrService, Service: s.Name, Message: fmt.Sprintf("it stopped before it served %s: look at its log", s.ReadyPipe)}
		}
		select {
		case <-ctx.Done():
			return &plan.Error{Code: plan.ErrTimeout, Service: s.Name, Message: fmt.Sprintf("it does not serve %s after %s (%v): look at its log", s.ReadyPipe, a.startTimeout(), err)}
		case <-time.After(a.pollInterval()):
		}
	}
}

// startReady starts a service, waits until it is ready, and, when it is
// not, rolls its new files back (rollBack). ready says the service runs
// (with its new files, or its previous ones).
func (r *applyRun) startReady(ctx context.Context, name string) (ready bool, err error) {
	if err := r.a.startAndWait(ctx, name); err != nil {
		return false, err
	}
	s, inPlan := r.plan.Service(name)
	if !inPlan {
		return true, nil
	}
	cause := r.a.awaitReady(ctx, s)
	if cause == nil {
		r.dropKept(s)
		return true, nil
	}
	return r.rollBack(ctx, s, cause)
}

// rollBack puts back the previous version of the service's Rollback files
// this apply replaced and starts the service again. Without a kept file
// there is nothing to go back to, and cause stands.
func (r *applyRun) rollBack(ctx context.Context, s *plan.Service, cause error) (bool, error) {
	var back []keptFile
	for _, f := range s.Rollback {
		if k, ok := r.kept[lower(f)]; ok {
			back = append(back, k)
		}
	}
	if len(back) == 0 {
		return false, cause
	}
	r.a.Log.Warn("service did not start with its new files; putting the previous ones back", "service", s.Name, "err", cause)
	if _, err := r.a.stopTree(ctx, s.Name, map[string]bool{}); err != nil {
		return false, errors.Join(cause, err)
	}
	for _, k := range back {
		if err := r.a.retryFile(func() error { return os.Rename(k.previous, k.local) }); err != nil {
			return false, errors.Join(cause, &plan.Error{Code: plan.ErrFileInstall, File: k.path, Message: fmt.Sprintf("putting the previous version back: %v", err)})
		}
		r.st.Manifest[k.path] = k.sha256
		delete(r.kept, lower(k.path))
	}
	if err := r.saveState(); err != nil {
		return false, errors.Join(cause, err)
	}
	if err := r.a.startAndWait(ctx, s.Name); err != nil {
		return false, errors.Join(cause, err)
	}
	if err := r.a.awaitReady(ctx, s); err != nil {
		return false, errors.Join(cause, fmt.Errorf("and with its previous files: %w", err))
	}
	return true, &plan.Error{Code: plan.ErrRolledBack, Service: s.Name, Message: fmt.Sprintf(
		"it did not start with the plan's new files (%v); the previous ones are back and it runs again with them: look at its log, and at the payload", cause)}
}

// dropKept deletes the previous versions kept for a service that runs with
// its new files.
func (r *applyRun) dropKept(s *plan.Service) {
	for _, f := range s.Rollback {
		if k, ok := r.kept[lower(f)]; ok {
			if err := os.Remove(k.previous); err != nil && !errors.Is(err, os.ErrNotExist) {
				r.a.Log.Warn("could not delete a kept previous version", "file", k.previous, "err", err)
			}
			delete(r.kept, lower(f))
		}
	}
}

// copyFile copies src to dst (created or replaced).
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeFileAtomic(dst, data)
}
