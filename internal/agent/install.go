package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/plan"
)

// InstallSelf is the agent's first run on a host, from a folder only
// administrators can write (the operator uploads it to its SSH user's
// profile folder): it secures winnode's folders as apply does (refusing
// UntrustedFolder where a local user created or planted something), copies
// its own program to `to` inside them, and reports the host's facts as Info
// does. Only then does the operator run the agent from C:\k, which a local
// user may have created before winnode ever came (Windows' default ACL of
// C:\ allows it); run from there first, a program such a user planted would
// run as Administrator before anything checked the folder.
func (a *Agent) InstallSelf(ctx context.Context, to string) (*plan.Info, error) {
	if !plan.Within(to, plan.Roots) {
		return nil, plan.Errorf(plan.ErrUsage, "install: %s is not in winnode's folders (%v)", to, plan.Roots)
	}
	// Before the lock: it lives in a root (secure.go).
	if err := a.secureFolders(ctx, plan.Roots, plan.DefaultStagingDir); err != nil {
		return nil, err
	}
	unlock, err := a.lock()
	if err != nil {
		return nil, err
	}
	err = a.copySelf(to)
	unlock()
	if err != nil {
		return nil, err
	}
	return a.Info(ctx)
}

// copySelf writes this program to the Windows path to, atomically (a
// crash leaves the old agent or the new one). Run from to itself, it has
// nothing to do.
func (a *Agent) copySelf(to string) error {
	local, err := a.localPath(to)
	if err != nil {
		return err
	}
	if isSelf(local) {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return plan.AsError(fmt.Errorf("finding this program: %w", err), plan.ErrHost)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return &plan.Error{Code: plan.ErrFileInstall, File: to, Message: fmt.Sprintf("reading this program (%s): %v", self, err)}
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return &plan.Error{Code: plan.ErrFileInstall, File: to, Message: err.Error()}
	}
	if err := a.retryFile(func() error { return writeFileAtomic(local, data) }); err != nil {
		return &plan.Error{Code: plan.ErrFileInstall, File: to, Message: fmt.Sprintf("copying the agent: %v", err)}
	}
	a.Log.Info("installed the agent", "path", to, "bytes", len(data))
	return nil
}
