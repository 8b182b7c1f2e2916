package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/payload"
)

func TestRunWritesAManifestTheOperatorLoads(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"kubelet.exe": "MZ kubelet", "host-local.exe": "MZ cni"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := run([]string{dir,
		"kubelet.exe", `C:\k\kubelet.exe`, "v1.37.1",
		"host-local.exe", `C:\k\cni\bin\host-local.exe`, "v1.9.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := payload.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := m.Lookup("host-local.exe")
	if !ok || f.HostPath != `C:\k\cni\bin\host-local.exe` || f.Version != "v1.9.1" || f.Size != int64(len("MZ cni")) {
		t.Fatalf("host-local.exe entry = %+v", f)
	}
}

func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	withFile := t.TempDir()
	if err := os.WriteFile(filepath.Join(withFile, "kubelet.exe"), []byte("MZ"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"no files":          {dir},
		"incomplete triple": {dir, "kubelet.exe", `C:\k\kubelet.exe`},
		"missing file":      {dir, "kubelet.exe", `C:\k\kubelet.exe`, "v1.37.1"},
		"relative hostPath": {withFile, "kubelet.exe", `k\kubelet.exe`, "v1.37.1"},
	} {
		t.Run(name, func(t *testing.T) {
			err := run(args)
			if err == nil {
				t.Fatalf("run(%q) succeeded", args)
			}
			if !strings.Contains(err.Error(), "usage") && !strings.Contains(err.Error(), "kubelet.exe") {
				t.Fatalf("error %q says neither the usage nor which file", err)
			}
		})
	}
}
