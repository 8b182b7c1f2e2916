package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/image"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/payload"
)

// imagePayload is a payload folder of two small files, the agent among
// them, as `make payload` writes one.
func imagePayload(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := []payload.File{
		{Name: "winnode-agent.exe", HostPath: `C:\k\winnode-agent.exe`, Version: "v0.5.2"},
		{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Version: "v1.37.0"},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), bytes.Repeat([]byte(f.Name), 512), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := payload.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestImage(t *testing.T) {
	src := imagePayload(t)
	out := filepath.Join(t.TempDir(), "winnode-image")
	r := run(t, "", "image", "--payload-dir", src, "--output", out)
	if r.code != ExitOK || !strings.Contains(r.out, "winnode v0.5.2, 2 payload files") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and the agent's version and the file count", r.code, r.out, r.err)
	}
	for _, hostPath := range []string{`C:\k\winnode-agent.exe`, `C:\k\kubelet.exe`, joinconfig.ImageManifestPath} {
		local, err := image.Local(out, hostPath)
		if _, statErr := os.Stat(local); err != nil || statErr != nil {
			t.Errorf("%s is not in the image folder: %v %v", hostPath, err, statErr)
		}
	}
	if _, err := os.Stat(filepath.Join(out, image.ReadmeFile)); err != nil {
		t.Errorf("no README in the image folder: %v", err)
	}

	t.Run("folder not empty", func(t *testing.T) {
		r := run(t, "", "image", "--payload-dir", src, "--output", out)
		if r.code != ExitFailed || !strings.Contains(r.err, "not empty") {
			t.Errorf("a second run into %s: exit %d, stderr %q; want exit 1, the folder refused", out, r.code, r.err)
		}
	})
	t.Run("damaged payload", func(t *testing.T) {
		damaged := imagePayload(t)
		if err := os.WriteFile(filepath.Join(damaged, "kubelet.exe"), []byte("tampered"), 0o644); err != nil {
			t.Fatal(err)
		}
		empty := t.TempDir()
		r := run(t, "", "image", "--payload-dir", damaged, "--output", empty)
		if r.code != ExitFailed || !strings.Contains(r.err, "kubelet.exe") {
			t.Errorf("a damaged payload: exit %d, stderr %q; want exit 1, the file named", r.code, r.err)
		}
		if entries, _ := os.ReadDir(empty); len(entries) != 0 {
			t.Errorf("a refused payload left %d entries in the output folder", len(entries))
		}
	})
}
