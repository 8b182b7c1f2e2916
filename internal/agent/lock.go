package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/plan"
)

// lockFile is held (an OS file lock, released by the OS if the agent dies)
// while apply, remove or bootstrap changes the host, so that an operator's
// retry after a dropped connection cannot run beside the first attempt.
const lockFile = "lock"

// errLocked is what tryLock returns when another process holds the lock.
var errLocked = errors.New("locked")

// lock takes the agent's lock or fails with code Busy.
func (a *Agent) lock() (unlock func(), err error) {
	path, err := a.Platform.LocalPath(StateDir.Join(lockFile))
	if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, &plan.Error{Code: plan.ErrHost, File: StateDir.String(), Message: err.Error()}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrHost, File: StateDir.Join(lockFile).String(), Message: err.Error()}
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, &plan.Error{Code: plan.ErrBusy, File: StateDir.Join(lockFile).String(),
				Message: "another winnode-agent is changing this host; retry when it has finished"}
		}
		return nil, &plan.Error{Code: plan.ErrHost, File: StateDir.Join(lockFile).String(), Message: fmt.Sprintf("locking: %v", err)}
	}
	return func() { f.Close() }, nil // closing releases the lock
}
