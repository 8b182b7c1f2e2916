package agent

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// findFiles finds every plan file in place or staged, and fails naming the
// missing ones before any service is stopped. A file the manifest lists but
// that is not in place any more (a change on the host) leaves the manifest,
// so that the operator's next sync uploads it.
func (r *applyRun) findFiles(context.Context) error {
	steps, err := r.a.planFiles(r.plan)
	if err != nil {
		var e *plan.Error
		if errors.As(err, &e) && e.Code == plan.ErrFileMissing {
			r.forgetMissing(steps)
		}
		return err
	}
	r.files = steps
	r.changed = map[string]bool{}
	for _, s := range steps {
		if s.blob != "" {
			r.changed[lower(s.file.Path)] = true
		}
	}
	return nil
}

// forgetMissing deletes from the manifest every plan file not found in
// place (steps are the files found), and saves the state; a failure to save
// is only logged, as the missing files' error matters more.
func (r *applyRun) forgetMissing(steps []fileStep) {
	inPlace := map[string]bool{}
	for _, s := range steps {
		inPlace[lower(s.file.Path)] = true
	}
	for _, f := range r.plan.Files {
		if !inPlace[lower(f.Path)] {
			delete(r.st.Manifest, f.Path)
		}
	}
	if err := r.a.saveState(r.st); err != nil {
		r.a.Log.Warn("could not save the agent's state", "err", err)
	}
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
// tampered file, a resumed upload whose kept part was wrong), or an encoded
// one that does not decode to the file's content, is deleted: the
// operator's sync trusts a blob staged with the right size, so a bad one
// left in place would fail every retry. Deleted, it is uploaded again in
// full by the next sync. This check is also what makes resumed uploads
// safe (internal/host, resume.go).
func (a *Agent) planFiles(p *plan.Plan) ([]fileStep, error) {
	staging, err := winpath.Parse(p.Staging())
	if err != nil {
		return nil, err
	}
	var steps []fileStep
	var missing []string
	var why []string
	bad := map[string]string{} // blob → why it is not usable, for files sharing it
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
		blob, reason, err := a.stagedBlob(staging, f, bad)
		if err != nil {
			return nil, err
		}
		if blob == "" {
			missing = append(missing, f.Path)
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
			Message: fmt.Sprintf("%d plan file(s) are neither in place nor staged with the right hash: %v; upload each to %s\\<sha256> (or its encoded blob to %s\\<encodedSHA256>) and apply again",
				len(missing), why, p.Staging(), p.Staging()),
		}
	}
	return steps, nil
}

// stagedBlob finds the staged blob of f's content: `<staging>\<SHA256>`
// when it is there with that hash, else, for a file the plan gives an
// Encoding, what the encoded blob `<staging>\<EncodedSHA256>` decodes to
// (apply_find_files_decode.go). It returns the blob's local path, or ""
// and why there is none; a blob with the wrong content is deleted
// (deleteBadBlob).
func (a *Agent) stagedBlob(staging winpath.Path, f plan.File, bad map[string]string) (string, string, error) {
	blobPath := staging.Join(f.SHA256)
	blob, err := a.Platform.LocalPath(blobPath)
	if err != nil {
		return "", "", &plan.Error{Code: plan.ErrFileInstall, File: f.Path, Message: err.Error()}
	}
	if reason, seen := bad[blob]; seen {
		return "", reason, nil
	}
	staged, err := hashFile(blob)
	if err != nil {
		return "", "", &plan.Error{Code: plan.ErrFileInstall, File: f.Path, Message: fmt.Sprintf("reading staged blob %s: %v", blobPath, err)}
	}
	if staged == f.SHA256 {
		return blob, "", nil
	}
	reason := "not staged"
	if staged != "" {
		reason = a.deleteBadBlob(blob, blobPath, staged)
	}
	if f.Encoding != "" {
		ok, encReason, err := a.decodeStaged(staging, f, blob)
		switch {
		case err != nil:
			return "", "", err
		case ok:
			return blob, "", nil
		case staged == "" || encReason != "not staged":
			reason = encReason
		}
	}
	bad[blob] = reason
	return "", reason, nil
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
