package filestore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/winnode/winnode/internal/winpath"
)

// host is one simulated host's C:\ in a test: a folder.
type host string

func (h host) write(t *testing.T, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(string(h), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append([]byte(elfMagic), data...), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func wpath(t *testing.T, s string) winpath.Path {
	t.Helper()
	p, err := winpath.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func same(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

func newStore(t *testing.T) (*Store, []host) {
	t.Helper()
	root := t.TempDir()
	s, err := New(filepath.Join(root, "store"), 16)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []host{host(filepath.Join(root, "a")), host(filepath.Join(root, "b")), host(filepath.Join(root, "c"))}
	return s, hosts
}

// Hosts holding the same content at the same path share one file; another
// content, another path or a small file is each host's own.
func TestShareOnePathAndContent(t *testing.T) {
	s, h := newStore(t)
	content := []byte("the stand-in program's bytes")
	kubeletA := h[0].write(t, "k/kubelet.exe", content)
	kubeletB := h[1].write(t, "k/kubelet.exe", content)
	proxyB := h[1].write(t, "k/kube-proxy.exe", content)
	otherC := h[2].write(t, "k/kubelet.exe", []byte("another build of the stand-in"))
	smallA := h[0].write(t, "k/small.exe", []byte("tiny"))
	smallB := h[1].write(t, "k/small.exe", []byte("tiny"))
	logA := h[0].write(t, "k/kubelet.log", nil)
	logB := h[1].write(t, "k/kubelet.log", nil)
	for _, p := range []string{logA, logB} { // the same bytes, but no program
		if err := os.WriteFile(p, []byte("a log line a program appends to"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct{ wp, lp string }{
		{`C:\k\kubelet.exe`, kubeletA}, {`C:\K\KUBELET.EXE`, kubeletB}, {`C:\k\kube-proxy.exe`, proxyB},
		{`C:\k\kubelet.exe`, otherC}, {`C:\k\small.exe`, smallA}, {`C:\k\small.exe`, smallB},
		{`C:\k\kubelet.log`, logA}, {`C:\k\kubelet.log`, logB},
	} {
		if err := s.Share(wpath(t, f.wp), f.lp); err != nil {
			t.Fatal(err)
		}
	}
	if !same(t, kubeletA, kubeletB) {
		t.Error("two hosts' kubelet.exe of one content are two files")
	}
	if same(t, kubeletB, proxyB) {
		t.Error("kubelet.exe and kube-proxy.exe of one host are one file: a running kubelet would make kube-proxy.exe in use")
	}
	if same(t, kubeletA, otherC) {
		t.Error("files of different content are one file")
	}
	if same(t, smallA, smallB) {
		t.Error("a file under the minimum size is shared")
	}
	if same(t, logA, logB) {
		t.Error("a file that is no program (a program may write it in place) is shared")
	}
	for _, p := range []string{kubeletA, kubeletB} {
		if data, _ := os.ReadFile(p); !bytes.Equal(data, append([]byte(elfMagic), content...)) {
			t.Errorf("%s holds %q after sharing", p, data)
		}
	}
	// Sharing again (the program's next start) changes nothing and leaves
	// no temporary name.
	if err := s.Share(wpath(t, `C:\k\kubelet.exe`), kubeletB); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(kubeletB))
	if len(entries) != 4 {
		t.Errorf("host b's folder holds %d entries after sharing twice, want 4: %v", len(entries), entries)
	}
}

// A host changing its shared file, by writing it in place after Unshare or
// by replacing it, changes no other host's.
func TestWritingASharedFileChangesNoOtherHost(t *testing.T) {
	s, h := newStore(t)
	content := []byte("the agent's bytes, version 1")
	var paths []string
	for _, x := range h {
		p := x.write(t, "k/winnode-agent.exe", content)
		if err := s.Share(wpath(t, `C:\k\winnode-agent.exe`), p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if !same(t, paths[0], paths[1]) || !same(t, paths[1], paths[2]) {
		t.Fatal("the three hosts' agents are not shared")
	}
	// Host a writes in place, as an SFTP upload over it does.
	if err := Unshare(paths[0]); err != nil {
		t.Fatal(err)
	}
	if same(t, paths[0], paths[1]) {
		t.Fatal("Unshare left host a's file shared")
	}
	if fi, _ := os.Stat(paths[0]); fi.Mode().Perm() != 0o755 {
		t.Errorf("host a's copy has mode %v, want the shared file's 0755", fi.Mode().Perm())
	}
	if err := os.WriteFile(paths[0], []byte("host a's own"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Host b replaces it, as the agent installs a file.
	tmp := h[1].write(t, "k/new.tmp", []byte("host b's new agent"))
	if err := os.Rename(tmp, paths[1]); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(paths[2]); !bytes.Equal(data, append([]byte(elfMagic), content...)) {
		t.Errorf("host c's agent holds %q after hosts a and b changed theirs, want %q", data, content)
	}
	// Unsharing a file no store shares does nothing.
	before, _ := os.Stat(paths[0])
	if err := Unshare(paths[0]); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(paths[0]); !os.SameFile(before, after) {
		t.Error("Unshare copied a file of one link")
	}
}
