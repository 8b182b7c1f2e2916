package winsim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// InstallImage gives the host, not yet booted, the files of a Windows image
// folder as `winnodectl image` writes it (internal/image): dir/C is copied
// onto the host's C:\, each file where the image puts it, as an image
// build's provisioner copied it before the image was generalized. Like
// files an elevated administrator writes, they are owned by
// Administrators and inherit their folder's ACL. A simulated host has C:\
// only: another drive folder in dir is refused.
func (h *Host) InstallImage(dir string) error {
	if h.Up() {
		return fmt.Errorf("simulated host %s: an image is installed before the host boots", h.id.Hostname)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("simulated host %s: image %s: %w", h.id.Hostname, dir, err)
	}
	for _, e := range entries {
		if e.IsDir() && len(e.Name()) == 1 && e.Name() != "C" {
			return fmt.Errorf("simulated host %s: image %s has drive %s:, and a simulated host has C: only", h.id.Hostname, dir, e.Name())
		}
	}
	src := filepath.Join(dir, "C")
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("simulated host %s: image %s has no C folder (what goes onto C:\\): %w", h.id.Hostname, dir, err)
	}
	n := 0
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(h.root, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a file", path)
		}
		n++
		return copyFileTo(path, dst)
	})
	if err != nil {
		return fmt.Errorf("simulated host %s: installing image %s: %w", h.id.Hostname, dir, err)
	}
	h.log.Info("simulated host: booting from an image", "image", dir, "files", n)
	return nil
}

// copyFileTo copies src to dst, replacing it.
func copyFileTo(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
