package winsim

import (
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pkg/sftp"
)

func TestSFTPWithWindowsPaths(t *testing.T) {
	th := newTestHost(t, Options{})
	c, err := sftp.NewClient(th.dial(t))
	if err != nil {
		t.Fatalf("sftp: %v", err)
	}
	defer c.Close()

	if wd, err := c.Getwd(); err != nil || wd != "/C:/Users/Administrator" {
		t.Errorf("Getwd = %q, %v; want /C:/Users/Administrator", wd, err)
	}
	if err := c.MkdirAll("/C:/k/staging"); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	put := func(path, content string) {
		t.Helper()
		f, err := c.Create(path)
		if err != nil {
			t.Fatalf("Create %s: %v", path, err)
		}
		if _, err := io.WriteString(f, content); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("close %s: %v", path, err)
		}
	}
	get := func(path string) string {
		t.Helper()
		f, err := c.Open(path)
		if err != nil {
			t.Fatalf("Open %s: %v", path, err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		return string(b)
	}
	// Backslash form, other case: the same folder.
	put(`C:\K\Staging\kubelet.exe`, "new kubelet")
	put("/C:/k/kubelet.exe", "old kubelet")
	if got := get(`/c:/k/STAGING/KUBELET.EXE`); got != "new kubelet" {
		t.Errorf("get after put = %q", got)
	}
	if _, err := os.Stat(filepath.Join(th.Root(), "k", "staging", "kubelet.exe")); err != nil {
		t.Errorf("the upload is not where C:\\k\\staging maps: %v", err)
	}
	// Rename replaces the target, both plain and posix-rename.
	if err := c.Rename("/C:/k/staging/kubelet.exe", "/C:/k/kubelet.exe"); err != nil {
		t.Fatalf("Rename over an existing file: %v", err)
	}
	if got := get(`C:\k\kubelet.exe`); got != "new kubelet" {
		t.Errorf("after rename: %q", got)
	}
	put("/C:/k/staging/a.txt", "a")
	if err := c.PosixRename("/C:/k/staging/a.txt", "/C:/k/b.txt"); err != nil {
		t.Fatalf("PosixRename: %v", err)
	}
	entries, err := c.ReadDir("/C:/k")
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "b.txt,kubelet.exe,staging" {
		t.Errorf("ReadDir /C:/k = %v", names)
	}
	if fi, err := c.Stat(`C:\k\Kubelet.exe`); err != nil || fi.Size() != int64(len("new kubelet")) || fi.IsDir() {
		t.Errorf("Stat = %v, %v", fi, err)
	}
	if _, err := c.Stat("/C:/k/missing"); !os.IsNotExist(err) {
		t.Errorf("Stat of a missing file: %v, want not exist", err)
	}
	if err := c.Remove("/C:/k/b.txt"); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if err := c.RemoveDirectory("/C:/k/staging"); err != nil {
		t.Errorf("RemoveDirectory: %v", err)
	}
	if err := c.Chtimes("/C:/k/kubelet.exe", fixedTime, fixedTime); err != nil {
		t.Errorf("Chtimes (setstat): %v", err)
	}
	if fi, err := c.Stat("/C:/k/kubelet.exe"); err != nil || !fi.ModTime().Equal(fixedTime) {
		t.Errorf("mtime after setstat: %v, %v", fi.ModTime(), err)
	}
	if _, err := c.Stat("/D:/x"); err == nil {
		t.Errorf("drive D: exists on the simulated host")
	}
}
