package agent

import (
	"context"
	"fmt"
	"os"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// makeDirectories creates the plan's folders (those that exist are kept).
func (r *applyRun) makeDirectories(context.Context) error {
	for _, d := range r.plan.Directories {
		if err := r.a.mkdir(d.Path); err != nil {
			return err
		}
	}
	return nil
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
