package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// hashFile returns the sha256 (lower-case hex) of a local file, or "" when
// it does not exist or is not a regular file.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// isSelf reports whether a local path is this running program.
func isSelf(local string) bool {
	self, err := os.Executable()
	return err == nil && samePath(self, local)
}

// retryFile repeats a file operation that fails, for up to FileRetryTimeout:
// on Windows a service reports Stopped shortly before its process exits and
// releases its executable and open files, and until then deleting or
// replacing them fails (access denied, sharing violation).
func (a *Agent) retryFile(op func() error) error {
	timeout := a.FileRetryTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		err := op()
		if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(a.pollInterval())
	}
}

// localPath maps a plan's Windows path to the local path, with errors of
// code Host naming the path.
func (a *Agent) localPath(p string) (string, error) {
	wp, err := winpath.Parse(p)
	if err != nil {
		return "", &plan.Error{Code: plan.ErrHost, File: p, Message: err.Error()}
	}
	local, err := a.Platform.LocalPath(wp)
	if err != nil {
		return "", &plan.Error{Code: plan.ErrHost, File: p, Message: err.Error()}
	}
	return local, nil
}

// removeFile deletes a plan file (retrying while a just-stopped service
// holds it); one already gone is not an error.
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
