package payload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FileError says which payload file is missing or does not match the
// manifest. Load returns it (wrapped) so callers can name the file.
type FileError struct {
	Name   string // the file's name in the manifest
	Path   string // where it was looked for
	Reason string // what is wrong, e.g. "sha256 is 3f…, manifest says 9a…"
	Err    error  // the underlying error, if any (e.g. fs.ErrNotExist)
}

func (e *FileError) Error() string {
	return fmt.Sprintf("payload file %s (%s): %s; rebuild the payload (make payload) or restore the file", e.Name, e.Path, e.Reason)
}

func (e *FileError) Unwrap() error { return e.Err }

// Load reads dir/manifest.json and checks every file it lists, and every
// encoded copy: present, a regular file, of the recorded size and sha256.
// The first file that fails is named in the error (a *FileError). It
// returns the manifest as written.
func Load(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("payload folder %s: %w; build one with `make payload` or point --payload-dir at one", dir, err)
	}
	defer f.Close()
	m, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, entry := range m.Files {
		if err := verify(dir, entry); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// verify checks one file, and its encoded copy, against its entry. (The
// copy is checked by hash, not decoded: Write decoded it when it made it.)
func verify(dir string, entry File) error {
	if err := verifyOne(dir, entry.Name, entry.Size, entry.SHA256); err != nil {
		return err
	}
	if entry.Encoding == "" {
		return nil
	}
	return verifyOne(dir, entry.EncodedName(), entry.EncodedSize, entry.EncodedSHA256)
}

// verifyOne checks that dir/name has this size and sha256.
func verifyOne(dir, name string, wantSize int64, wantSum string) error {
	path := filepath.Join(dir, name)
	size, sum, err := digest(path)
	if err != nil {
		reason := err.Error()
		if errors.Is(err, os.ErrNotExist) {
			reason = "missing"
		}
		return &FileError{Name: name, Path: path, Reason: reason, Err: err}
	}
	if size != wantSize {
		return &FileError{Name: name, Path: path, Reason: fmt.Sprintf("size is %d bytes, manifest says %d", size, wantSize)}
	}
	if sum != wantSum {
		return &FileError{Name: name, Path: path, Reason: fmt.Sprintf("sha256 is %s, manifest says %s (corrupted)", sum, wantSum)}
	}
	return nil
}

// digest returns the size and lower-case hex sha256 of a regular file.
func digest(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	if !info.Mode().IsRegular() {
		return 0, "", fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("read: %w", err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
