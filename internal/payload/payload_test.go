package payload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles creates a payload folder with the given files and contents.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func sample(t *testing.T) (string, []File) {
	dir := writeFiles(t, map[string]string{
		"kubelet.exe":       "MZ kubelet",
		"winnode-agent.exe": "MZ agent",
	})
	files := []File{
		{Name: "winnode-agent.exe", HostPath: `C:\k\winnode-agent.exe`, Version: "v0.1.0"},
		{Name: "kubelet.exe", HostPath: `/C:/k/kubelet.exe`, Version: "v1.37.1"},
	}
	return dir, files
}

func TestWriteThenLoad(t *testing.T) {
	dir, files := sample(t)
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.SchemaVersion != SchemaVersion || len(m.Files) != 2 {
		t.Fatalf("manifest = %+v", m)
	}
	// Sorted by name, host paths in Windows form, digests computed.
	// sha256 of "MZ kubelet", computed independently with sha256sum.
	want := File{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Size: int64(len("MZ kubelet")),
		SHA256: "8028af51b00029cdcb7f679013c4ae884fe815adec26a2d566a91a2581757f9b", Version: "v1.37.1"}
	if k := m.Files[0]; k != want {
		t.Fatalf("kubelet entry = %+v, want %+v", k, want)
	}
	if f, ok := m.Lookup("KUBELET.EXE"); !ok || f.Name != "kubelet.exe" {
		t.Fatalf("Lookup is not case-insensitive: %+v %v", f, ok)
	}
	if _, ok := m.Lookup("kube-proxy.exe"); ok {
		t.Fatal("Lookup found a file that is not listed")
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	dir, files := sample(t)
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	files[0], files[1] = files[1], files[0]
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	if !bytes.Equal(first, second) {
		t.Fatalf("same files, different manifests:\n%s\n%s", first, second)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".manifest-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

func TestLoadNamesTheBadFile(t *testing.T) {
	cases := map[string]struct {
		damage func(dir string) error
		reason string
	}{
		"corrupted, same size": {
			damage: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte("MZ kubeleT"), 0o755)
			},
			reason: "corrupted",
		},
		"truncated": {
			damage: func(dir string) error { return os.Truncate(filepath.Join(dir, "kubelet.exe"), 3) },
			reason: "size is 3 bytes",
		},
		"missing": {
			damage: func(dir string) error { return os.Remove(filepath.Join(dir, "kubelet.exe")) },
			reason: "missing",
		},
		"a folder in its place": {
			damage: func(dir string) error {
				p := filepath.Join(dir, "kubelet.exe")
				if err := os.Remove(p); err != nil {
					return err
				}
				return os.Mkdir(p, 0o755)
			},
			reason: "not a regular file",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, files := sample(t)
			if err := Write(dir, files); err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Load = %v, want a *FileError", err)
			}
			if fe.Name != "kubelet.exe" || !strings.Contains(err.Error(), "kubelet.exe") || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %q does not name kubelet.exe and %q", err, tc.reason)
			}
		})
	}
}

func TestLoadMissingManifest(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "make payload") {
		t.Fatalf("Load of an empty folder = %v", err)
	}
}

func TestWriteRefusesBadEntries(t *testing.T) {
	cases := map[string]File{
		"missing file":         {Name: "nope.exe", HostPath: `C:\k\nope.exe`},
		"name with a folder":   {Name: `bin\kubelet.exe`, HostPath: `C:\k\kubelet.exe`},
		"relative host path":   {Name: "kubelet.exe", HostPath: `k\kubelet.exe`},
		"drive root host path": {Name: "kubelet.exe", HostPath: `C:\`},
		"the manifest itself":  {Name: "Manifest.json", HostPath: `C:\k\manifest.json`},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := sample(t)
			if err := Write(dir, []File{f}); err == nil {
				t.Fatalf("Write(%+v) succeeded", f)
			}
			if _, err := os.Stat(filepath.Join(dir, ManifestFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a manifest was written for a bad entry: %v", err)
			}
		})
	}
}

const goodSHA = "0000000000000000000000000000000000000000000000000000000000000000"

// encoded is a manifest entry of 10 bytes with an encoded copy.
func encoded(encoding, sha string, size int) string {
	return fmt.Sprintf(`{"name":"a.exe","hostPath":"C:\\k\\a.exe","sha256":"%s","size":10,"version":"v1","encoding":%q,"encodedSHA256":%q,"encodedSize":%d}`, goodSHA, encoding, sha, size)
}

func TestDecodeRefuses(t *testing.T) {
	entry := func(name, hostPath, sha string) string {
		return `{"name":"` + name + `","hostPath":"` + hostPath + `","sha256":"` + sha + `","size":1,"version":"v1"}`
	}
	good := entry("a.exe", `C:\\k\\a.exe`, goodSHA)
	cases := map[string]string{
		"not JSON":            `{`,
		"wrong schema":        `{"schemaVersion":"v3","files":[` + good + `]}`,
		"encoding in v1":      `{"schemaVersion":"v1","files":[` + encoded("zstd", goodSHA, 1) + `]}`,
		"unknown encoding":    `{"schemaVersion":"v2","files":[` + encoded("gzip", goodSHA, 1) + `]}`,
		"encoded not smaller": `{"schemaVersion":"v2","files":[` + encoded("zstd", goodSHA, 10) + `]}`,
		"encoded bad sha":     `{"schemaVersion":"v2","files":[` + encoded("zstd", "abc", 1) + `]}`,
		"encoded no encoding": `{"schemaVersion":"v2","files":[` + encoded("", goodSHA, 1) + `]}`,
		"name of a copy":      `{"schemaVersion":"v2","files":[` + entry("a.exe.ZST", `C:\\k\\a.exe`, goodSHA) + `]}`,
		"no schema":           `{"files":[` + good + `]}`,
		"no files":            `{"schemaVersion":"v1","files":[]}`,
		"unknown field":       `{"schemaVersion":"v1","files":[` + good + `],"extra":1}`,
		"trailing data":       `{"schemaVersion":"v1","files":[` + good + `]} {}`,
		"short sha":           `{"schemaVersion":"v1","files":[` + entry("a.exe", `C:\\k\\a.exe`, "abc") + `]}`,
		"upper-case sha":      `{"schemaVersion":"v1","files":[` + entry("a.exe", `C:\\k\\a.exe`, strings.Repeat("A", 64)) + `]}`,
		"dot-dot name":        `{"schemaVersion":"v1","files":[` + entry("..", `C:\\k\\a.exe`, goodSHA) + `]}`,
		"duplicate name":      `{"schemaVersion":"v1","files":[` + good + `,` + entry("A.EXE", `C:\\k\\b.exe`, goodSHA) + `]}`,
		"duplicate host path": `{"schemaVersion":"v1","files":[` + good + `,` + entry("b.exe", `c:/K/A.exe`, goodSHA) + `]}`,
		"UNC host path":       `{"schemaVersion":"v1","files":[` + entry("a.exe", `\\\\srv\\share\\a.exe`, goodSHA) + `]}`,
		"negative size":       `{"schemaVersion":"v1","files":[{"name":"a.exe","hostPath":"C:\\k\\a.exe","sha256":"` + goodSHA + `","size":-1}]}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			if m, err := Decode(strings.NewReader(doc)); err == nil {
				t.Fatalf("Decode accepted %s: %+v", doc, m)
			}
		})
	}
	for _, doc := range []string{
		`{"schemaVersion":"v1","files":[` + good + `]}`,
		`{"schemaVersion":"v2","files":[` + good + `]}`,
		`{"schemaVersion":"v2","files":[` + encoded("zstd", goodSHA, 4) + `]}`,
	} {
		if _, err := Decode(strings.NewReader(doc)); err != nil {
			t.Fatalf("Decode refused a good manifest %s: %v", doc, err)
		}
	}
}

func TestDecodeRefusesHugeInput(t *testing.T) {
	doc := `{"schemaVersion":"v1","files":[],"pad":"` + strings.Repeat("x", maxManifestBytes) + `"}`
	_, err := Decode(strings.NewReader(doc))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Decode of %d bytes = %v", len(doc), err)
	}
}
