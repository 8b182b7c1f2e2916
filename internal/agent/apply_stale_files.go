package agent

import (
	"context"

	"github.com/winnode/winnode/internal/plan"
)

// removeStaleFiles deletes the files earlier plans installed, or their
// services wrote (Service.Writes), that this one does not name, and
// forgets them in the manifest. A path outside winnode's folders is only
// forgotten (and reported): the state may not be ours.
func (r *applyRun) removeStaleFiles(context.Context) error {
	keep := map[string]bool{}
	for _, path := range planPaths(r.plan) {
		keep[lower(path)] = true
	}
	for _, old := range r.previous {
		for _, path := range planPaths(old) {
			if keep[lower(path)] {
				continue
			}
			keep[lower(path)] = true // once
			if !r.a.inWinnodeFolders(path, r.roots, r.res) {
				delete(r.st.Manifest, path)
				continue
			}
			if err := r.a.removeFile(path); err != nil {
				return err
			}
			delete(r.st.Manifest, path)
			r.res.Files = append(r.res.Files, plan.FileResult{Path: path, Action: plan.FileRemoved})
		}
	}
	return nil
}

// planPaths are the files a plan puts on the host: its files, and those its
// services write when they start.
func planPaths(p *plan.Plan) []string {
	var paths []string
	for _, f := range p.Files {
		paths = append(paths, f.Path)
	}
	for _, s := range p.Services {
		paths = append(paths, s.Writes...)
	}
	return paths
}
