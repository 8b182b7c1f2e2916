package agent

import (
	"context"
	"errors"
	"os"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// recordPending is apply's first step: it loads the agent's state, records
// the plan as pending before anything changes (so that what it creates is
// known as winnode's even after a crash), and forgets the manifest entries
// of files the plan is about to change. A state that fails validation is
// set aside and apply goes on as on a new host.
func (r *applyRun) recordPending(context.Context) error {
	st, err := r.a.loadState()
	if msg, untrusted := r.a.untrustedState(err); untrusted {
		r.a.warn(r.res, msg+r.a.setAsideState())
	} else if err != nil {
		return plan.AsError(err, plan.ErrHost)
	}
	r.st, r.previous = st, st.plans()
	// What the state names is deleted only inside winnode's folders and
	// this plan's own (the operator sent it).
	r.roots = append(append([]string{}, plan.Roots...), r.plan.Roots()...)
	st.Pending = r.plan
	for _, f := range r.plan.Files {
		if h, ok := st.Manifest[f.Path]; ok && h != f.SHA256 {
			delete(st.Manifest, f.Path)
		}
	}
	return r.saveState()
}

// recordApplied is apply's last step: the plan becomes the applied one, and
// the staged blobs it consumed are deleted.
func (r *applyRun) recordApplied(context.Context) error {
	r.st.Applied, r.st.Pending = r.plan, nil
	if err := r.saveState(); err != nil {
		return err
	}
	r.a.cleanStaging(r.plan)
	return nil
}

// saveState writes the state as the steps have changed it.
func (r *applyRun) saveState() error {
	if err := r.a.saveState(r.st); err != nil {
		return plan.AsError(err, plan.ErrHost)
	}
	return nil
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
		names := []string{f.SHA256}
		if f.Encoding != "" {
			// Left when the file was in place already, or its deletion
			// after decoding failed.
			names = append(names, f.EncodedSHA256)
		}
		for _, name := range names {
			if local, err := a.Platform.LocalPath(staging.Join(name)); err == nil {
				if err := os.Remove(local); err != nil && !errors.Is(err, os.ErrNotExist) {
					a.Log.Warn("could not delete a consumed staging blob", "blob", staging.Join(name).String(), "err", err)
				}
			}
		}
	}
	if local, err := a.Platform.LocalPath(staging); err == nil {
		os.Remove(local) // only succeeds when empty
	}
}
