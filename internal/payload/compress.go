package payload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/winnode/winnode/internal/blob"
)

// encode gives the entry f (whose Size and SHA256 are already those of
// dir/<Name>) its compressed copy dir/<Name>.zst, or none, with its
// Encoding fields set to match. The copy is made once: when the manifest
// Write replaces (old, nil if none) lists the same content, its decision is
// kept (the copy is only checked against its recorded hash), so building a
// payload again does not compress it again. Nor is the same content
// compressed twice in one Write: a file whose content an entry before it in
// done already has shares that entry's encoded copy, a hard link to it (the
// simulated payload carries one stand-in program under several names).
func encode(dir string, f *File, old *Manifest, done map[string]File) error {
	f.Encoding, f.EncodedSHA256, f.EncodedSize = "", "", 0
	zst := filepath.Join(dir, f.Name+blob.Suffix)
	if prev, ok := reusable(dir, *f, old); ok {
		*f = prev
		if f.Encoding == "" {
			return removeIfExists(zst)
		}
		return nil
	}
	if twin, ok := done[f.SHA256]; ok && twin.Size == f.Size {
		if twin.Encoding == "" {
			return removeIfExists(zst)
		}
		if err := linkEncoded(filepath.Join(dir, twin.EncodedName()), zst); err != nil {
			return err
		}
		f.Encoding, f.EncodedSHA256, f.EncodedSize = twin.Encoding, twin.EncodedSHA256, twin.EncodedSize
		return nil
	}
	size, sum, err := compressFile(filepath.Join(dir, f.Name), zst, f.Size, f.SHA256)
	if err != nil {
		return err
	}
	if size >= f.Size {
		// Not smaller (random padding, an already compressed file): it
		// travels as it is.
		return removeIfExists(zst)
	}
	f.Encoding, f.EncodedSHA256, f.EncodedSize = blob.Zstd, sum, size
	return nil
}

// reusable returns old's entry for f when it describes the same content
// and, if it has an encoded copy, that copy is still there as recorded.
// Only a manifest of SchemaVersion says that a file without a copy was
// found not to compress; a v1 manifest never had copies.
func reusable(dir string, f File, old *Manifest) (File, bool) {
	if old == nil || old.SchemaVersion != SchemaVersion {
		return File{}, false
	}
	prev, ok := old.Lookup(f.Name)
	if !ok || prev.Name != f.Name || prev.SHA256 != f.SHA256 || prev.Size != f.Size {
		return File{}, false
	}
	prev.HostPath, prev.Version = f.HostPath, f.Version
	if prev.Encoding == "" {
		return prev, true
	}
	if verifyOne(dir, prev.EncodedName(), prev.EncodedSize, prev.EncodedSHA256) != nil {
		return File{}, false
	}
	return prev, true
}

// compressFile writes the zstd encoding of src to dst (through a temporary
// file, renamed), decodes it again to check that it gives back the content
// of size and sum, and returns the encoding's size and sha256. When the
// encoding is not smaller than the content, dst is not written.
func compressFile(src, dst string, size int64, sum string) (int64, string, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, "", err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return 0, "", err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	n, out, err := blob.Compress(io.MultiWriter(tmp, h), in)
	if err == nil && n != size {
		err = fmt.Errorf("%s is %d bytes, not %d: it changed while the payload was written", src, n, size)
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return 0, "", fmt.Errorf("compress %s: %w", src, err)
	}
	if out >= size {
		return out, "", nil
	}
	if err := checkDecodes(tmp.Name(), size, sum); err != nil {
		return 0, "", fmt.Errorf("compress %s: the compressed copy does not decode to it: %w", src, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return 0, "", err
	}
	return out, hex.EncodeToString(h.Sum(nil)), nil
}

// checkDecodes decodes an encoded copy and checks the content it gives.
func checkDecodes(path string, size int64, sum string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return blob.Decode(io.Discard, f, blob.Zstd, size, sum)
}

// removeStaleCopies deletes the encoded copies in dir that no entry of m
// has (a file dropped from the payload, or one that no longer compresses).
func removeStaleCopies(dir string, m *Manifest) error {
	copies, err := filepath.Glob(filepath.Join(dir, "*"+blob.Suffix))
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range m.Files {
		if name := f.EncodedName(); name != "" {
			keep[strings.ToLower(name)] = true
		}
	}
	for _, c := range copies {
		if !keep[strings.ToLower(filepath.Base(c))] {
			if err := removeIfExists(c); err != nil {
				return err
			}
		}
	}
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// linkEncoded makes dst a hard link to the encoded copy src, through a
// temporary name renamed into place, as compressFile writes one.
func linkEncoded(src, dst string) error {
	if a, err := os.Stat(src); err == nil {
		if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
			return nil // already the same file: rename would keep both names
		}
	}
	tmp := dst + ".link.tmp"
	if err := removeIfExists(tmp); err != nil {
		return err
	}
	if err := os.Link(src, tmp); err != nil {
		return fmt.Errorf("share %s: %w", src, err)
	}
	return os.Rename(tmp, dst)
}
