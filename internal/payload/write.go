package payload

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/winnode/winnode/internal/winpath"
)

// Write computes the size and sha256 of dir/<Name> for every entry (whatever
// SHA256, Size and Encoding fields the caller set are replaced), compresses
// each file into dir/<Name>.zst where that makes it smaller (compress.go;
// once: a file the manifest it replaces already lists with the same content
// is not compressed again, nor the same content twice in one Write),
// normalises each HostPath to its Windows form,
// and writes dir/manifest.json. Compressed copies no entry has are deleted.
// Entries are sorted by name so the same files always give the same
// manifest bytes. The manifest is written to a temporary file and renamed,
// so a reader never sees half of it.
func Write(dir string, files []File) error {
	m := Manifest{SchemaVersion: SchemaVersion, Files: make([]File, 0, len(files))}
	old := previous(dir)
	done := map[string]File{} // by sha256: the entries encoded so far
	for _, f := range files {
		if err := validName(f.Name); err != nil {
			return fmt.Errorf("payload folder %s: %w", dir, err)
		}
		hp, err := winpath.Parse(f.HostPath)
		if err != nil {
			return fmt.Errorf("payload file %s: hostPath: %w", f.Name, err)
		}
		f.HostPath = hp.String()
		path := filepath.Join(dir, f.Name)
		f.Size, f.SHA256, err = digest(path)
		if err != nil {
			return fmt.Errorf("payload file %s (%s): %w", f.Name, path, err)
		}
		if err := encode(dir, &f, old, done); err != nil {
			return fmt.Errorf("payload file %s (%s): %w", f.Name, path, err)
		}
		done[f.SHA256] = f
		m.Files = append(m.Files, f)
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	if err := m.Validate(); err != nil {
		return fmt.Errorf("payload folder %s: %w", dir, err)
	}
	if err := removeStaleCopies(dir, &m); err != nil {
		return fmt.Errorf("payload folder %s: %w", dir, err)
	}
	data, err := Encode(&m)
	if err != nil {
		return fmt.Errorf("payload folder %s: encode manifest: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".manifest-*.json")
	if err != nil {
		return fmt.Errorf("payload folder %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("payload folder %s: write manifest: %w", dir, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("payload folder %s: %w", dir, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("payload folder %s: write manifest: %w", dir, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("payload folder %s: %w", dir, err)
	}
	return nil
}

// Encode is the manifest as Write writes it: indented JSON, newline
// terminated, the same bytes for the same manifest.
func Encode(m *Manifest) ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// previous is the manifest in dir that Write replaces, or nil when there is
// none it can read (then every file is compressed).
func previous(dir string) *Manifest {
	f, err := os.Open(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	m, err := Decode(f)
	if err != nil {
		return nil
	}
	return m
}
