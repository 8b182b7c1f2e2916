package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pblob "github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
)

// compressibleFile writes n bytes that compress to a bit over half (random
// hex digits: 4 bits of entropy in each 8-bit byte, so that the copy is
// still large enough to be cut off midway), and its zstd copy as
// internal/payload makes it, and describes both.
func compressibleFile(t testing.TB, hostPath string, n int) LocalFile {
	t.Helper()
	raw := make([]byte, n/2)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n)
	const hexdigits = "0123456789abcdef"
	for i := range data {
		b := raw[i/2]
		if i%2 == 1 {
			b >>= 4
		}
		data[i] = hexdigits[b&0x0f]
	}
	dir := t.TempDir()
	name := filepath.Base(strings.ReplaceAll(hostPath, `\`, "/"))
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var enc bytes.Buffer
	if _, _, err := pblob.Compress(&enc, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+pblob.Suffix, enc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return LocalFile{LocalPath: p, HostPath: hostPath, SHA256: sum(data), Size: int64(n),
		Encoded: &Encoded{LocalPath: p + pblob.Suffix, SHA256: sum(enc.Bytes()), Size: int64(enc.Len())}}
}

// wireReceived is what the simulated host has received on its SSH
// connections so far.
func wireReceived(h *simHost) int64 {
	in, _ := h.WireBytes()
	return in
}

// A file with a compressed copy travels compressed: only the copy's bytes
// are sent, as the blob named by the copy's hash, and the bytes the host
// receives on the wire shrink with it.
func TestSyncSendsTheCompressedCopy(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	ctx := context.Background()
	f := compressibleFile(t, `C:\k\kubelet.exe`, 8<<20)
	plain := f
	plain.Encoded = nil
	plain.HostPath = `C:\k\kubelet-plain.exe`
	t.Logf("%d bytes compress to %d (%.3f)", f.Size, f.Encoded.Size, float64(f.Encoded.Size)/float64(f.Size))

	before := wireReceived(h)
	res, err := c.Sync(ctx, []LocalFile{f}, nil, stagingDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	compressedWire := wireReceived(h) - before
	if want := (SyncResult{BytesUploaded: f.Encoded.Size, FilesUploaded: 1}); res != want {
		t.Errorf("sync = %+v, want %+v: only the compressed copy sent", res, want)
	}
	if got := staged(t, h, f.Encoded.SHA256); !bytes.Equal(got, must(os.ReadFile(f.Encoded.LocalPath))) {
		t.Error("the staged blob is not the compressed copy")
	}
	if _, err := os.Stat(filepath.Join(must(h.Path(stagingDir)), f.SHA256)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the content was staged as well: %v", err)
	}

	// The same file without its copy, on the same connection: the host
	// receives the whole content.
	before = wireReceived(h)
	if _, err := c.Sync(ctx, []LocalFile{plain}, nil, `C:\k\staging2`, nil); err != nil {
		t.Fatal(err)
	}
	plainWire := wireReceived(h) - before
	t.Logf("bytes received by the host: %d compressed, %d as it is (%.3f)", compressedWire, plainWire, float64(compressedWire)/float64(plainWire))
	if compressedWire < f.Encoded.Size || plainWire < f.Size {
		t.Errorf("the host received %d and %d bytes: fewer than the %d and %d sent", compressedWire, plainWire, f.Encoded.Size, f.Size)
	}
	// SSH's framing and SFTP's requests add a few percent to either.
	if compressedWire*100 > f.Encoded.Size*105 || compressedWire*100 > plainWire*60 {
		t.Errorf("the compressed sync cost %d bytes on the wire: want at most 1.05 x the copy's %d and 0.6 x the plain sync's %d", compressedWire, f.Encoded.Size, plainWire)
	}

	// Retried: the copy is staged, nothing moves.
	res, err = c.Sync(ctx, []LocalFile{f}, nil, stagingDir, nil)
	if err != nil || res != (SyncResult{FilesSkipped: 1, FilesAlreadyStaged: 1}) {
		t.Errorf("retried sync = %+v, %v: want the copy found staged", res, err)
	}
	// An apply that decoded the copy and then failed leaves the content's
	// blob instead: that will do too.
	stagingLocal := must(h.Path(stagingDir))
	if err := os.Rename(filepath.Join(stagingLocal, f.Encoded.SHA256), filepath.Join(stagingLocal, f.SHA256)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stagingLocal, f.SHA256), localContent(t, plain), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = c.Sync(ctx, []LocalFile{f}, nil, stagingDir, nil)
	if err != nil || res != (SyncResult{FilesSkipped: 1, FilesAlreadyStaged: 1}) {
		t.Errorf("sync with the decoded content staged = %+v, %v: want it found staged", res, err)
	}
}

func TestPlanSyncRefusesBadEncodedCopy(t *testing.T) {
	good := content(`C:\k\a.exe`, "a")
	for name, e := range map[string]*Encoded{
		"no local path": {SHA256: good.SHA256, Size: 1},
		"bad sha256":    {LocalPath: "/x.zst", SHA256: "abc", Size: 1},
		"negative size": {LocalPath: "/x.zst", SHA256: good.SHA256, Size: -1},
	} {
		f := good
		f.Encoded = e
		if _, _, err := planSync([]LocalFile{f}, nil); err == nil || !strings.Contains(err.Error(), `C:\k\a.exe`) {
			t.Errorf("%s: planSync = %v, want an error naming the file", name, err)
		}
	}
}

// A compressed upload cut off midway by a dropped connection is resumed
// like any other (its .part is named by the copy's hash, so it can only be
// a prefix of the copy); the real agent then decodes the blob, checks the
// content's hash and puts the file in place.
func TestResumedCompressedUploadApplies(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	agent := installAgent(t, c)
	f := compressibleFile(t, `C:\k\bin\tool.exe`, 24<<20)
	cutAt := f.Encoded.Size * 3 / 4

	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Sync(ctx, []LocalFile{f}, nil, plan.DefaultStagingDir, func(p Progress) {
		if p.FileDone >= cutAt {
			once.Do(h.DropConnections)
		}
	})
	if err == nil {
		t.Fatal("sync over a dropped connection succeeded")
	}
	part, err := os.Stat(filepath.Join(must(h.Path(plan.DefaultStagingDir)), f.Encoded.SHA256+".part"))
	if err != nil || part.Size() <= resumeMargin {
		t.Fatalf("no usable .part of the compressed copy after the drop: %v", err)
	}

	c2 := connect(t, h.options())
	res, err := c2.Sync(context.Background(), []LocalFile{f}, nil, plan.DefaultStagingDir, nil)
	if err != nil {
		t.Fatalf("retried sync: %v", err)
	}
	t.Logf("retried sync = %+v: sent %.3f of the copy, %.3f of the file", res, float64(res.BytesUploaded)/float64(f.Encoded.Size), float64(res.BytesUploaded)/float64(f.Size))
	if res.BytesResumed == 0 || res.BytesUploaded+res.BytesResumed != f.Encoded.Size || res.FilesUploaded != 1 {
		t.Errorf("retried sync = %+v: want the copy's %d bytes, part of them kept", res, f.Encoded.Size)
	}

	p := plan.Plan{
		SchemaVersion: plan.SchemaVersionEncoded,
		Version:       "test-1",
		Directories:   []plan.Directory{{Path: `C:\k\bin`}},
		Files: []plan.File{{Path: f.HostPath, SHA256: f.SHA256, Size: f.Size,
			Encoding: plan.EncodingZstd, EncodedSHA256: f.Encoded.SHA256, EncodedSize: f.Encoded.Size}},
	}
	planJSON, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var result plan.Result
	if err := c2.RunAgent(context.Background(), agent, []string{"apply", "--plan", "-"}, bytes.NewReader(planJSON), &result); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got, err := os.ReadFile(must(h.Path(f.HostPath))); err != nil || !bytes.Equal(got, localContent(t, f)) {
		t.Errorf("%s after apply is not the local content (%v)", f.HostPath, err)
	}
	if left, _ := os.ReadDir(must(h.Path(plan.DefaultStagingDir))); len(left) != 0 {
		t.Errorf("the staging folder still holds %v", left)
	}
}
