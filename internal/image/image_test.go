package image

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/testkit"
)

// newPayload is a payload folder of small files, compressed where that
// helps (as `make payload` makes them).
func newPayload(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var entries []payload.File
	for name, hostPath := range files {
		content := bytes.Repeat([]byte(name+" "), 4096)
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, payload.File{Name: name, HostPath: hostPath, Version: "v0.5.2"})
	}
	if err := payload.Write(dir, entries); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWrite(t *testing.T) {
	src := newPayload(t, map[string]string{
		"winnode-agent.exe": `C:\k\winnode-agent.exe`,
		"kubelet.exe":       `C:\k\kubelet.exe`,
		"host-local.exe":    `C:\k\cni\bin\host-local.exe`,
		"containerd.exe":    `C:\Program Files\containerd\containerd.exe`,
	})
	out := filepath.Join(t.TempDir(), "image")
	m, err := Write(src, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		if f.Encoding != "" {
			t.Errorf("%s keeps its encoding %s; the image has no compressed copies", f.Name, f.Encoding)
		}
		local, _ := Local(out, f.HostPath)
		got, err := os.ReadFile(local)
		want, _ := os.ReadFile(filepath.Join(src, f.Name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s at %s: %v", f.Name, local, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "C", "Program Files", "containerd", "containerd.exe")); err != nil {
		t.Errorf("a file outside C:\\k is not at its place: %v", err)
	}
	local, _ := Local(out, joinconfig.ImageManifestPath)
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	back, err := payload.Decode(bytes.NewReader(data))
	if err != nil || len(back.Files) != 4 {
		t.Errorf("the image's manifest: %v", err)
	}
	readme, err := os.ReadFile(filepath.Join(out, ReadmeFile))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "readme.golden", string(readme))

	if _, err := Write(src, out); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a second Write into the same folder: %v; want it refused", err)
	}
}

func TestWriteRefuses(t *testing.T) {
	noAgent := newPayload(t, map[string]string{"kubelet.exe": `C:\k\kubelet.exe`})
	if _, err := Write(noAgent, t.TempDir()); err == nil || !strings.Contains(err.Error(), "winnode-agent.exe") {
		t.Errorf("a payload without the agent: %v", err)
	}
	damaged := newPayload(t, map[string]string{"winnode-agent.exe": `C:\k\winnode-agent.exe`, "kubelet.exe": `C:\k\kubelet.exe`})
	if err := os.WriteFile(filepath.Join(damaged, "kubelet.exe"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(damaged, t.TempDir()); err == nil || !strings.Contains(err.Error(), "kubelet.exe") {
		t.Errorf("a damaged payload: %v; want it refused, naming the file", err)
	}
}
