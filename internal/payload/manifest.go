// Package payload describes the folder of Windows binaries the operator copies
// to every host (kubelet.exe, kube-proxy.exe, the CNI plugins,
// winnode-agent.exe) and its manifest.json, which records for each file where
// it goes on the host, its sha256, its size and the upstream version it was
// built from, and, for each file that compression makes smaller, its
// zstd-compressed copy `<name>.zst` beside it (internal/blob): what hosts are
// sent. Write compresses each file once, when the payload is built.
//
// The folder is produced by `make payload` (hack/payload/build.sh) for real
// hosts, or by tests from Linux stand-in programs for simulated ones. The
// operator reads it with Load, which refuses a folder whose files do not match
// their manifest, so a truncated copy or a corrupted image layer is found at
// start-up rather than on a host.
package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/winpath"
)

// SchemaVersion is the manifest format this package writes: SchemaVersionV1
// with the compressed copies (File.Encoding). Decode reads both; a manifest
// with any other schemaVersion is refused rather than half-understood, and
// an operator that reads only v1 refuses a v2 manifest by its version.
const SchemaVersion = "v2"

// SchemaVersionV1 is the manifest format before compressed copies: a
// payload built then is still read, and its files travel as they are.
const SchemaVersionV1 = "v1"

// ManifestFile is the name of the manifest inside a payload folder.
const ManifestFile = "manifest.json"

// maxManifestBytes bounds what Decode reads: a manifest lists a handful of
// files, so anything near this size is not a manifest.
const maxManifestBytes = 1 << 20

// Manifest lists every file of a payload folder.
type Manifest struct {
	SchemaVersion string `json:"schemaVersion"`
	Files         []File `json:"files"`
}

// File is one file of the payload.
type File struct {
	// Name is the file's name inside the payload folder, e.g. "kubelet.exe".
	Name string `json:"name"`
	// HostPath is where the file is installed on the Windows host, e.g. `C:\k\kubelet.exe`.
	HostPath string `json:"hostPath"`
	// SHA256 is the lower-case hex sha256 of the file's content.
	SHA256 string `json:"sha256"`
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
	// Version is the upstream version the file was built from, e.g. "v1.37.1".
	Version string `json:"version"`
	// Encoding is how the file's copy EncodedName() beside it is encoded
	// (blob.Zstd), and EncodedSHA256 and EncodedSize describe that copy:
	// it is what hosts are sent. Encoding is empty when compressing does
	// not make the file smaller; the file then travels as it is.
	Encoding      string `json:"encoding,omitempty"`
	EncodedSHA256 string `json:"encodedSHA256,omitempty"`
	EncodedSize   int64  `json:"encodedSize,omitempty"`
}

// EncodedName is the name of the file's encoded copy in the payload folder
// (`kubelet.exe.zst`), or "" when it has none.
func (f File) EncodedName() string {
	if f.Encoding == "" {
		return ""
	}
	return f.Name + blob.Suffix
}

// Lookup returns the entry called name (compared as Windows compares names,
// case-insensitively).
func (m *Manifest) Lookup(name string) (File, bool) {
	for _, f := range m.Files {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return File{}, false
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Decode parses and validates a manifest without looking at the files it
// lists: the schema version, every entry's name, host path, sha256 and size,
// and that no two entries share a name or a host path. Unknown fields are
// refused, so a typo in a hand-edited manifest is reported, not ignored.
func Decode(r io.Reader) (*Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("payload manifest: read: %w", err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("payload manifest: larger than %d bytes; this is not a manifest written by `make payload`", maxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("payload manifest: not valid JSON of schema %s: %w", SchemaVersion, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("payload manifest: unexpected data after the JSON document")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the manifest on its own (Decode calls it).
func (m *Manifest) Validate() error {
	if m.SchemaVersion != SchemaVersion && m.SchemaVersion != SchemaVersionV1 {
		return fmt.Errorf("payload manifest: schemaVersion %q is not supported (want %q or %q); rebuild the payload with this version of winnode", m.SchemaVersion, SchemaVersion, SchemaVersionV1)
	}
	if len(m.Files) == 0 {
		return fmt.Errorf("payload manifest: lists no files")
	}
	names := map[string]bool{}
	var hostPaths []winpath.Path
	for i, f := range m.Files {
		if err := validName(f.Name); err != nil {
			return fmt.Errorf("payload manifest: entry %d: %w", i, err)
		}
		key := strings.ToLower(f.Name)
		if names[key] {
			return fmt.Errorf("payload manifest: file %q is listed twice", f.Name)
		}
		names[key] = true
		hp, err := winpath.Parse(f.HostPath)
		if err != nil {
			return fmt.Errorf("payload manifest: file %q: hostPath: %w", f.Name, err)
		}
		if len(hp.Parts) == 0 {
			return fmt.Errorf("payload manifest: file %q: hostPath %q is a drive root, not a file", f.Name, f.HostPath)
		}
		for j, other := range hostPaths {
			if hp.Equal(other) {
				return fmt.Errorf("payload manifest: files %q and %q have the same hostPath %s", m.Files[j].Name, f.Name, hp)
			}
		}
		hostPaths = append(hostPaths, hp)
		if !sha256Hex.MatchString(f.SHA256) {
			return fmt.Errorf("payload manifest: file %q: sha256 %q is not 64 lower-case hex digits", f.Name, f.SHA256)
		}
		if f.Size < 0 {
			return fmt.Errorf("payload manifest: file %q: negative size %d", f.Name, f.Size)
		}
		if err := m.validEncoding(f); err != nil {
			return fmt.Errorf("payload manifest: file %q: %w", f.Name, err)
		}
	}
	return nil
}

// validEncoding checks an entry's encoded copy: none, or zstd of a valid
// hash and a size smaller than the file's (a copy that is not smaller is
// not kept), and only in a manifest of SchemaVersion.
func (m *Manifest) validEncoding(f File) error {
	if f.Encoding == "" {
		if f.EncodedSHA256 != "" || f.EncodedSize != 0 {
			return fmt.Errorf("encodedSHA256 and encodedSize are given without an encoding")
		}
		return nil
	}
	switch {
	case m.SchemaVersion != SchemaVersion:
		return fmt.Errorf("encoding %q needs schemaVersion %q, not %q", f.Encoding, SchemaVersion, m.SchemaVersion)
	case f.Encoding != blob.Zstd:
		return fmt.Errorf("encoding %q is not supported (want %q or none)", f.Encoding, blob.Zstd)
	case !sha256Hex.MatchString(f.EncodedSHA256):
		return fmt.Errorf("encodedSHA256 %q is not 64 lower-case hex digits", f.EncodedSHA256)
	case f.EncodedSize <= 0 || f.EncodedSize >= f.Size:
		return fmt.Errorf("encodedSize %d is not between 1 and the file's size %d, less one: a copy that is not smaller is not kept", f.EncodedSize, f.Size)
	}
	return nil
}

// validName accepts a plain file name: no folders, nothing Windows forbids,
// and not the manifest itself.
func validName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("file name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("file name %q is not a file", name)
	case strings.ContainsAny(name, "/\\"):
		return fmt.Errorf("file name %q contains a path separator; payload files sit directly in the payload folder", name)
	case strings.ContainsAny(name, "<>:\"|?*\x00"):
		return fmt.Errorf("file name %q has a character Windows forbids in names", name)
	case strings.EqualFold(name, ManifestFile):
		return fmt.Errorf("file name %q is the manifest itself", name)
	case strings.HasSuffix(strings.ToLower(name), blob.Suffix):
		return fmt.Errorf("file name %q ends in %s, which names the payload's compressed copies", name, blob.Suffix)
	}
	return nil
}
