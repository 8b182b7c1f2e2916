// Package payload describes the folder of Windows binaries the operator copies
// to every host (kubelet.exe, kube-proxy.exe, the CNI plugins,
// winnode-agent.exe) and its manifest.json, which records for each file where
// it goes on the host, its sha256, its size and the upstream version it was
// built from.
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

	"github.com/winnode/winnode/internal/winpath"
)

// SchemaVersion is the manifest format this package reads and writes. A
// manifest with any other schemaVersion is refused rather than half-understood.
const SchemaVersion = "v1"

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
	if m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("payload manifest: schemaVersion %q is not supported (want %q); rebuild the payload with this version of winnode", m.SchemaVersion, SchemaVersion)
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
	}
	return nil
}
