package host

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func content(hostPath, data string) LocalFile {
	return LocalFile{HostPath: hostPath, Content: []byte(data), SHA256: sum([]byte(data)), Size: int64(len(data))}
}

func TestPlanSync(t *testing.T) {
	kubelet := content(`C:\k\kubelet.exe`, "kubelet v2")
	proxy := content(`C:\k\kube-proxy.exe`, "proxy v1")
	config := content(`C:\k\config.yaml`, "same")
	copyOfConfig := content(`C:\k\other.yaml`, "same")

	installed := map[string]string{
		`c:\K\KUBE-PROXY.EXE`:     proxy.SHA256,              // same file, other case: skipped
		`/C:/k/kubelet.exe`:       sum([]byte("kubelet v1")), // changed: uploaded
		`not a path`:              proxy.SHA256,              // ignored
		`C:\k\config.yaml.backup`: config.SHA256,             // another file
	}
	blobs, skipped, err := planSync([]LocalFile{kubelet, proxy, config, copyOfConfig}, installed)
	if err != nil {
		t.Fatalf("planSync: %v", err)
	}
	if skipped != 1 {
		t.Errorf("skipped = %d, want 1 (kube-proxy, installed under another case)", skipped)
	}
	var got []string
	for _, b := range blobs {
		got = append(got, b.SHA256[:8]+"="+strings.Join(b.HostPaths, "+"))
	}
	want := []string{
		kubelet.SHA256[:8] + `=C:\k\kubelet.exe`,
		config.SHA256[:8] + `=C:\k\config.yaml+C:\k\other.yaml`, // one blob for identical content
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("blobs = %q, want %q", got, want)
	}

	// Nothing installed: everything uploaded; all installed: nothing.
	if blobs, skipped, _ := planSync([]LocalFile{kubelet, proxy}, nil); len(blobs) != 2 || skipped != 0 {
		t.Errorf("new host: %d blobs, %d skipped; want 2, 0", len(blobs), skipped)
	}
	all := map[string]string{kubelet.HostPath: kubelet.SHA256, proxy.HostPath: strings.ToUpper(proxy.SHA256)}
	if blobs, skipped, _ := planSync([]LocalFile{kubelet, proxy}, all); len(blobs) != 0 || skipped != 2 {
		t.Errorf("configured host: %d blobs, %d skipped; want 0, 2", len(blobs), skipped)
	}
}

func TestPlanSyncRefusesBadEntries(t *testing.T) {
	good := content(`C:\k\a`, "a")
	bad := map[string]LocalFile{
		"relative path":        {HostPath: `k\a`, Content: []byte("a"), SHA256: good.SHA256, Size: 1},
		"blob name escapes":    {HostPath: `C:\k\a`, Content: []byte("a"), SHA256: `..\..\Windows\x`, Size: 1},
		"upper-case hash":      {HostPath: `C:\k\a`, Content: []byte("a"), SHA256: strings.ToUpper(good.SHA256), Size: 1},
		"negative size":        {HostPath: `C:\k\a`, LocalPath: "/x", SHA256: good.SHA256, Size: -1},
		"both sources":         {HostPath: `C:\k\a`, LocalPath: "/x", Content: []byte("a"), SHA256: good.SHA256, Size: 1},
		"content size wrong":   {HostPath: `C:\k\a`, Content: []byte("a"), SHA256: good.SHA256, Size: 2},
		"content hash wrong":   {HostPath: `C:\k\a`, Content: []byte("b"), SHA256: good.SHA256, Size: 1},
		"same hash other size": {HostPath: `C:\k\b`, LocalPath: "/x", SHA256: good.SHA256, Size: 7},
	}
	for name, f := range bad {
		t.Run(name, func(t *testing.T) {
			_, _, err := planSync([]LocalFile{good, f}, nil)
			if err == nil {
				t.Fatal("planSync accepted it")
			}
			if name != "relative path" && !strings.Contains(err.Error(), `C:\k\`) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestStagedPath(t *testing.T) {
	sha := sum([]byte("x"))
	if got, err := StagedPath(`/c:/k/staging/`, sha); err != nil || got != `C:\k\staging\`+sha {
		t.Errorf("StagedPath = %q, %v", got, err)
	}
	for _, bad := range [][2]string{{`k\staging`, sha}, {`C:\k`, `..\x`}, {`C:\k`, strings.ToUpper(sha)}} {
		if got, err := StagedPath(bad[0], bad[1]); err == nil {
			t.Errorf("StagedPath(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}

// FuzzPlanSync: the installed map comes from the host (the agent's info);
// whatever it holds, planning never panics, and every file is either
// skipped or uploaded exactly once.
func FuzzPlanSync(f *testing.F) {
	a, b := sum([]byte("a")), sum([]byte("b"))
	f.Add(`C:\k\a`, a, `c:/K/B`, b)
	f.Add(`/C:/k/a`, strings.ToUpper(a), `C:\k\..\k\a`, a)
	f.Add(`not a path`, "", "\x00", "zz")
	f.Fuzz(func(t *testing.T, p1, s1, p2, s2 string) {
		files := []LocalFile{content(`C:\k\a`, "a"), content(`C:\k\b`, "b"), content(`C:\k\c`, "a")}
		blobs, skipped, err := planSync(files, map[string]string{p1: s1, p2: s2})
		if err != nil {
			t.Fatalf("planSync of valid files: %v", err)
		}
		n := skipped
		for _, b := range blobs {
			n += len(b.HostPaths)
		}
		if n != len(files) {
			t.Fatalf("%d files skipped or uploaded, want %d", n, len(files))
		}
	})
}
