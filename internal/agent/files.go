package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// fileStep is what apply does with one plan file.
type fileStep struct {
	file  plan.File
	local string // destination
	blob  string // staged blob to install from; "" when already in place
}

// planFiles decides, for every plan file, whether it is in place or comes
// from a staged blob; a file that is neither is an ErrFileMissing error
// naming every such file (the first in Error.File).
//
// A staged blob whose content does not hash to its name (disk corruption, a
// tampered file, a resumed upload whose kept part was wrong) is deleted:
// the operator's sync trusts a blob staged with the right size, so a bad
// one left in place would fail every retry. Deleted, it is uploaded again
// in full by the next sync. This check is also what makes resumed uploads
// safe (internal/host, resume.go).
func (a *Agent) planFiles(p *plan.Plan) ([]fileStep, error) {
	staging, err := winpath.Parse(p.Staging())
	if err != nil {
		return nil, err
	}
	var steps []fileStep
	var missing []string
	var why []string
	bad := map[string]string{} // blob → what deleting it did, for files sharing it
	for _, f := range p.Files {
		wp, _ := winpath.Parse(f.Path) // validated by Decode
		local, err := a.Platform.LocalPath(wp)
		if err != nil {
			return nil, &plan.Error{Code: plan.ErrFileInstall, File: f.Path, Message: err.Error()}
		}
		got, err := hashFile(local)
		if err != nil {
			return nil, &plan.Error{Code: plan.ErrFileInstall, File: f.Path, Message: fmt.Sprintf("reading it to check its hash: %v", err)}
		}
		if got == f.SHA256 {
			steps = append(steps, fileStep{file: f, local: local})
			continue
		}
		blobPath := staging.Join(f.SHA256)
		blob, err := a.Platform.LocalPath(blobPath)
		if err != nil {
			return nil, &plan.Error{Code: plan.ErrFileInstall, File: f.Path, Message: err.Error()}
		}
		reason, seen := bad[blob]
		staged := ""
		if !seen {
			staged, err = hashFile(blob)
			if err != nil {
				return nil, &plan.Error{Code: plan.ErrFileInstall, File: f.Path, Message: fmt.Sprintf("reading staged blob %s: %v", blobPath, err)}
			}
			if staged != "" && staged != f.SHA256 {
				reason = a.deleteBadBlob(blob, blobPath, staged)
				bad[blob] = reason
			}
		}
		if staged != f.SHA256 {
			missing = append(missing, f.Path)
			if reason == "" {
				reason = "not staged"
			}
			if got != "" {
				reason += fmt.Sprintf("; the file in place has sha256 %s", got)
			}
			why = append(why, fmt.Sprintf("%s (want sha256 %s: %s)", f.Path, f.SHA256, reason))
			continue
		}
		steps = append(steps, fileStep{file: f, local: local, blob: blob})
	}
	if len(missing) > 0 {
		return steps, &plan.Error{
			Code: plan.ErrFileMissing, File: missing[0],
			Message: fmt.Sprintf("%d plan file(s) are neither in place nor staged with the right hash: %v; upload each to %s\\<sha256> and apply again",
				len(missing), why, p.Staging()),
		}
	}
	return steps, nil
}

// deleteBadBlob deletes a staged blob whose content hashes to sum, not to
// its name, and says what it did, for the error message.
func (a *Agent) deleteBadBlob(local string, blobPath winpath.Path, sum string) string {
	err := a.retryFile(func() error { return os.Remove(local) })
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		a.Log.Warn("staged blob has the wrong content and could not be deleted", "blob", blobPath.String(), "sha256", sum, "err", err)
		return fmt.Sprintf("staged blob has sha256 %s and could not be deleted (%v); delete %s and upload it again", sum, err, blobPath)
	}
	a.Log.Warn("deleted a staged blob with the wrong content; the next sync uploads it again", "blob", blobPath.String(), "sha256", sum)
	return fmt.Sprintf("staged blob has sha256 %s, deleted; upload it again", sum)
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
