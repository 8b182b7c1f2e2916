package agent

import (
	"context"

	"github.com/winnode/winnode/internal/plan"
)

// removeStaleFiles deletes the files earlier plans installed and this one
// does not name, and forgets them in the manifest. A path outside winnode's
// folders is only forgotten (and reported): the state may not be ours.
func (r *applyRun) removeStaleFiles(context.Context) error {
	keep := map[string]bool{}
	for _, f := range r.plan.Files {
		keep[lower(f.Path)] = true
	}
	for _, old := range r.previous {
		for _, f := range old.Files {
			if keep[lower(f.Path)] {
				continue
			}
			keep[lower(f.Path)] = true // once
			if !r.a.inWinnodeFolders(f.Path, r.roots, r.res) {
				delete(r.st.Manifest, f.Path)
				continue
			}
			if err := r.a.removeFile(f.Path); err != nil {
				return err
			}
			delete(r.st.Manifest, f.Path)
			r.res.Files = append(r.res.Files, plan.FileResult{Path: f.Path, Action: plan.FileRemoved})
		}
	}
	return nil
}
