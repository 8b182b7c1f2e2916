package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// checkImage reads the payload manifest the Windows image carries and
// checks every file it lists at its host path: present, of the recorded
// size and sha256. The first file that fails is named (ErrImage), and
// nothing on the host is changed: an image damaged, or changed after it
// was built, does not become a node.
func (r *joinRun) checkImage(ctx context.Context) error {
	log := r.log("image")
	data, err := ReadHostFile(r.a.Platform, r.o.ManifestFile, bytes.NewReader(nil))
	if err != nil {
		return &plan.Error{Code: plan.ErrImage, File: r.o.ManifestFile, Message: fmt.Sprintf(
			"%v: the Windows image carries no winnode payload manifest; build the image with what `winnodectl image` writes (docs/cluster-api.md)", err)}
	}
	m, err := payload.Decode(bytes.NewReader(data))
	if err != nil {
		return &plan.Error{Code: plan.ErrImage, File: r.o.ManifestFile, Message: err.Error()}
	}
	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return plan.AsError(err, plan.ErrHost)
		}
		if err := r.checkImageFile(f); err != nil {
			return err
		}
	}
	r.manifest = m
	log.Info("every payload file of the image matches its manifest", "manifest", r.o.ManifestFile, "files", len(m.Files))
	return nil
}

// checkImageFile checks one payload file at its host path.
func (r *joinRun) checkImageFile(f payload.File) error {
	fail := func(format string, args ...any) error {
		return &plan.Error{Code: plan.ErrImage, File: f.HostPath, Message: fmt.Sprintf("payload file %s: %s; the Windows image is damaged or was changed after it was built: build it again (`winnodectl image`)",
			f.Name, fmt.Sprintf(format, args...))}
	}
	local, err := r.a.localPath(f.HostPath)
	if err != nil {
		return err
	}
	fi, err := os.Stat(local)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fail("missing")
	case err != nil:
		return fail("%v", err)
	case !fi.Mode().IsRegular():
		return fail("not a file")
	case fi.Size() != f.Size:
		return fail("%d bytes, the image's manifest says %d", fi.Size(), f.Size)
	}
	sum, err := hashFile(local)
	if err != nil {
		return fail("reading: %v", err)
	}
	if sum != f.SHA256 {
		return fail("sha256 %s, the image's manifest says %s", sum, f.SHA256)
	}
	return nil
}
