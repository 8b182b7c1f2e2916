package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/plan"
)

// placeFiles moves each staged blob into place (the services using them
// are stopped by now), records every plan file in the manifest, and saves
// the state. A blob two files share is copied for the first and moved for
// the last.
func (r *applyRun) placeFiles(context.Context) error {
	blobUses := map[string]int{}
	for _, s := range r.files {
		if s.blob != "" {
			blobUses[s.blob]++
		}
	}
	for _, s := range r.files {
		action := plan.FileUnchanged
		if s.blob != "" {
			blobUses[s.blob]--
			r.a.Log.Info("installing file", "file", s.file.Path, "sha256", s.file.SHA256)
			if err := r.keepPrevious(s); err != nil {
				return err
			}
			stillNeeded := blobUses[s.blob] > 0
			if err := r.a.retryFile(func() error { return install(s, stillNeeded) }); err != nil {
				return &plan.Error{Code: plan.ErrFileInstall, File: s.file.Path, Message: fmt.Sprintf("moving the staged blob into place: %v", err)}
			}
			action = plan.FileInstalled
		}
		r.st.Manifest[s.file.Path] = s.file.SHA256
		r.res.Files = append(r.res.Files, plan.FileResult{Path: s.file.Path, Action: action})
	}
	return r.saveState()
}

// install moves (or, when another file still needs the same blob, copies)
// a staged blob into place. The blob is hashed again by planFiles just
// before, and the move is a rename within the drive.
func install(step fileStep, blobStillNeeded bool) error {
	if err := os.MkdirAll(filepath.Dir(step.local), 0o755); err != nil {
		return err
	}
	if isSelf(step.local) {
		// Windows cannot replace a running program, but can rename it: the
		// running agent moves aside (deleted by a later apply or remove).
		old := step.local + ".old"
		os.Remove(old)
		if err := os.Rename(step.local, old); err != nil {
			return fmt.Errorf("moving the running agent aside: %w", err)
		}
	}
	if !blobStillNeeded {
		if err := os.Rename(step.blob, step.local); err == nil {
			return nil
		}
		// Fall back to copying (a destination on another volume).
	}
	src, err := os.Open(step.blob)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(step.local), "."+filepath.Base(step.local)+".*.tmp")
	if err != nil {
		return err
	}
	_, cerr := io.Copy(tmp, src)
	if err := errors.Join(cerr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), step.local); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
