package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// decodeStaged decodes the encoded blob of f, `<staging>\<EncodedSHA256>`,
// into the blob of its content, dst (`<staging>\<SHA256>`, local path),
// and deletes the encoded blob. The encoded blob's bytes must hash to its
// name and decode to exactly f's content (f.Size bytes of sha256
// f.SHA256); otherwise it is deleted, so that the next sync uploads it
// again, and ok is false with the reason, naming the blob. The content is
// written to a temporary file in the staging folder and renamed, so dst
// never holds part of it. An error is returned only when the staging
// folder cannot be used.
func (a *Agent) decodeStaged(staging winpath.Path, f plan.File, dst string) (ok bool, reason string, err error) {
	encPath := staging.Join(f.EncodedSHA256)
	fail := func(format string, args ...any) (bool, string, error) {
		return false, "", &plan.Error{Code: plan.ErrFileInstall, File: f.Path, Message: fmt.Sprintf(format, args...)}
	}
	enc, err := a.Platform.LocalPath(encPath)
	if err != nil {
		return fail("%v", err)
	}
	// Its own hash first: a blob whose bytes do not hash to its name was
	// damaged after the operator checked what it sent (or is not a file).
	sum, err := hashFile(enc)
	switch {
	case err != nil:
		return fail("reading staged blob %s: %v", encPath, err)
	case sum == "":
		return false, "not staged", nil
	case sum != f.EncodedSHA256:
		return false, a.deleteBadBlob(enc, encPath, sum), nil
	}
	a.Log.Info("decoding a staged blob", "file", f.Path, "blob", encPath.String(), "encoding", f.Encoding, "bytes", f.EncodedSize, "contentBytes", f.Size)
	derr, err := decodeFile(enc, dst, f)
	if err != nil {
		return fail("decoding staged blob %s: %v", encPath, err)
	}
	if derr != nil {
		a.Log.Warn("a staged blob does not decode to the file's content", "file", f.Path, "blob", encPath.String(), "err", derr)
		return false, fmt.Sprintf("staged %s blob %s %s", f.Encoding, encPath, a.deleteDecoded(enc, derr)), nil
	}
	if err := os.Remove(enc); err != nil {
		// Only costs disk space: cleanStaging tries again after the apply.
		a.Log.Warn("could not delete a decoded staging blob", "blob", encPath.String(), "err", err)
	}
	return true, "", nil
}

// decodeFile decodes the encoded blob enc into dst, through a temporary
// file beside dst that is renamed when the content is right. derr says why
// the blob is not f's content; err, why the files could not be used. Both
// files are closed when it returns (Windows deletes no open file).
func decodeFile(enc, dst string, f plan.File) (derr, err error) {
	in, err := os.Open(enc)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.decoding")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	derr = blob.Decode(tmp, in, f.Encoding, f.Size, f.SHA256)
	cerr := tmp.Close()
	in.Close()
	switch {
	case derr != nil:
		return derr, nil
	case cerr != nil:
		return nil, cerr
	}
	return nil, os.Rename(tmp.Name(), dst)
}

// deleteDecoded deletes an encoded blob that does not decode to its file's
// content, and says what it did, for the error message.
func (a *Agent) deleteDecoded(local string, why error) string {
	err := a.retryFile(func() error { return os.Remove(local) })
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("is not the file's content (%v) and could not be deleted (%v); delete it and upload it again", why, err)
	}
	return fmt.Sprintf("is not the file's content (%v), deleted; upload it again", why)
}
