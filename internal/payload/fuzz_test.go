package payload

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/winpath"
)

// FuzzDecode feeds arbitrary bytes to the manifest decoder: it must never
// panic, and whatever it accepts must satisfy every rule Validate promises
// and survive a round trip through JSON unchanged.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":"v1","files":[{"name":"kubelet.exe","hostPath":"C:\\k\\kubelet.exe","sha256":"` + goodSHA + `","size":10,"version":"v1.37.1"}]}`))
	f.Add([]byte(`{"schemaVersion":"v1","files":[{"name":"a","hostPath":"/C:/k/a","sha256":"` + goodSHA + `","size":0,"version":""},{"name":"b","hostPath":"C:/k/cni/bin/b","sha256":"` + goodSHA + `","size":1,"version":"v1.9.0"}]}`))
	f.Add([]byte(`{"schemaVersion":"v2","files":[{"name":"kubelet.exe","hostPath":"C:\\k\\kubelet.exe","sha256":"` + goodSHA + `","size":10,"version":"v1.37.1","encoding":"zstd","encodedSHA256":"` + goodSHA + `","encodedSize":4}]}`))
	f.Add([]byte(`{"schemaVersion":"v1","files":[{"name":"a","hostPath":"C:\\k\\a","sha256":"` + goodSHA + `","size":10,"encoding":"zstd","encodedSHA256":"` + goodSHA + `","encodedSize":40}]}`))
	f.Add([]byte(`{"schemaVersion":"v3","files":[]}`))
	f.Add([]byte(`{"schemaVersion":"v1","files":[{"name":"..","hostPath":"C:\\","sha256":"x","size":-1}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		if (m.SchemaVersion != SchemaVersion && m.SchemaVersion != SchemaVersionV1) || len(m.Files) == 0 {
			t.Fatalf("accepted manifest %+v breaks the schema rules", m)
		}
		seen := map[string]bool{}
		for _, file := range m.Files {
			if strings.ContainsAny(file.Name, `/\`) || file.Name == ".." || file.Name == "." || file.Name == "" {
				t.Fatalf("accepted unsafe name %q", file.Name)
			}
			if seen[strings.ToLower(file.Name)] {
				t.Fatalf("accepted duplicate name %q", file.Name)
			}
			seen[strings.ToLower(file.Name)] = true
			if _, err := winpath.Parse(file.HostPath); err != nil {
				t.Fatalf("accepted bad hostPath %q: %v", file.HostPath, err)
			}
			if file.Size < 0 || !sha256Hex.MatchString(file.SHA256) {
				t.Fatalf("accepted bad size or sha256: %+v", file)
			}
			if strings.HasSuffix(strings.ToLower(file.Name), ".zst") {
				t.Fatalf("accepted a name that is a compressed copy's: %q", file.Name)
			}
			switch file.Encoding {
			case "":
				if file.EncodedSHA256 != "" || file.EncodedSize != 0 {
					t.Fatalf("accepted an encoded copy without an encoding: %+v", file)
				}
			case "zstd":
				if m.SchemaVersion != SchemaVersion || !sha256Hex.MatchString(file.EncodedSHA256) || file.EncodedSize <= 0 || file.EncodedSize >= file.Size {
					t.Fatalf("accepted a bad encoded copy: %+v in schema %s", file, m.SchemaVersion)
				}
			default:
				t.Fatalf("accepted encoding %q", file.Encoding)
			}
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Decode(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v\n%s", err, again)
		}
		if len(m2.Files) != len(m.Files) {
			t.Fatalf("round trip changed the manifest: %+v vs %+v", m, m2)
		}
		for i := range m.Files {
			if m.Files[i] != m2.Files[i] {
				t.Fatalf("round trip changed entry %d: %+v vs %+v", i, m.Files[i], m2.Files[i])
			}
		}
	})
}
