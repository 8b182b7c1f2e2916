package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/winsim"
)

const stagingDir = `C:\k\staging`

// localFile writes n random bytes to a file and describes it.
func localFile(t testing.TB, hostPath string, n int) LocalFile {
	t.Helper()
	data := make([]byte, n)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(strings.ReplaceAll(hostPath, `\`, "/")))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return LocalFile{LocalPath: p, HostPath: hostPath, SHA256: sum(data), Size: int64(n)}
}

// staged reads a blob from the simulated host's disk.
func staged(t *testing.T, h *simHost, sha string) []byte {
	t.Helper()
	p, err := h.Path(stagingDir + `\` + sha)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("staged blob %s: %v", sha, err)
	}
	return b
}

func localContent(t *testing.T, f LocalFile) []byte {
	t.Helper()
	if f.LocalPath == "" {
		return f.Content
	}
	b, err := os.ReadFile(f.LocalPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSync(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	ctx := context.Background()

	kubelet := localFile(t, `C:\k\kubelet.exe`, 3<<20+17)
	proxy := localFile(t, `C:\k\kube-proxy.exe`, 1<<20)
	empty := localFile(t, `C:\k\empty`, 0)
	kubeconfig := content(`C:\k\bootstrap-kubeconfig`, "token: secret\n")
	files := []LocalFile{kubelet, proxy, empty, kubeconfig}
	total := kubelet.Size + proxy.Size + empty.Size + kubeconfig.Size

	var reports []Progress
	res, err := c.Sync(ctx, files, nil, stagingDir, func(p Progress) { reports = append(reports, p) })
	if err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if res != (SyncResult{BytesUploaded: total, FilesUploaded: 4}) {
		t.Errorf("first sync = %+v, want %d bytes and 4 files uploaded", res, total)
	}
	for _, f := range files {
		if got := staged(t, h, f.SHA256); !bytes.Equal(got, localContent(t, f)) {
			t.Errorf("%s: the staged blob differs from the local content", f.HostPath)
		}
	}
	entries, _ := os.ReadDir(must(h.Path(stagingDir)))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".part") {
			t.Errorf("%s left behind", e.Name())
		}
	}
	if len(reports) == 0 {
		t.Fatal("no progress reported")
	}
	last := reports[len(reports)-1]
	if last.BytesDone != total || last.BytesTotal != total || last.FilesTotal != 4 {
		t.Errorf("last progress = %+v, want %d of %d bytes", last, total, total)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i].BytesDone < reports[i-1].BytesDone {
			t.Errorf("progress went backwards: %+v after %+v", reports[i], reports[i-1])
		}
	}

	// A retried sync (the agent did not apply yet: nothing installed)
	// finds every blob staged and moves no bytes.
	res, err = c.Sync(ctx, files, nil, stagingDir, nil)
	if err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if res != (SyncResult{FilesSkipped: 4, FilesAlreadyStaged: 4}) {
		t.Errorf("second sync = %+v, want 0 bytes, 4 files already staged", res)
	}

	// Once installed (the agent reports the hashes), nothing is even looked
	// at; a changed file is uploaded alone.
	installed := map[string]string{}
	for _, f := range files {
		installed[strings.ToUpper(f.HostPath)] = f.SHA256
	}
	kubelet2 := localFile(t, kubelet.HostPath, 2<<20)
	files[0] = kubelet2
	res, err = c.Sync(ctx, files, installed, stagingDir, nil)
	if err != nil {
		t.Fatalf("third sync: %v", err)
	}
	if res != (SyncResult{BytesUploaded: kubelet2.Size, FilesUploaded: 1, FilesSkipped: 3}) {
		t.Errorf("third sync = %+v, want only the new kubelet (%d bytes)", res, kubelet2.Size)
	}
	if !bytes.Equal(staged(t, h, kubelet2.SHA256), localContent(t, kubelet2)) {
		t.Errorf("the new kubelet's staged blob differs")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSyncReplacesTruncatedBlob(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	f := localFile(t, `C:\k\a.exe`, 100000)
	// A blob of the wrong size (an older, interrupted tool) and a leftover
	// .part are replaced.
	dir := must(h.Path(stagingDir))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, f.SHA256), []byte("short"), 0o644)
	os.WriteFile(filepath.Join(dir, f.SHA256+".part"), []byte("junk"), 0o644)
	res, err := c.Sync(context.Background(), []LocalFile{f}, nil, stagingDir, nil)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if res.BytesUploaded != f.Size {
		t.Errorf("sync = %+v, want the blob uploaded again", res)
	}
	if !bytes.Equal(staged(t, h, f.SHA256), localContent(t, f)) {
		t.Error("the staged blob differs from the local content")
	}
}

func TestSyncRefusesChangedLocalFile(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	f := localFile(t, `C:\k\a.exe`, 1000)
	// Same size, other content: caught by the hash while streaming.
	os.WriteFile(f.LocalPath, bytes.Repeat([]byte{1}, 1000), 0o644)
	_, err := c.Sync(context.Background(), []LocalFile{f}, nil, stagingDir, nil)
	if err == nil || !strings.Contains(err.Error(), "changed since its hash was taken") {
		t.Fatalf("sync of a changed file: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(must(h.Path(stagingDir)), f.SHA256)); err == nil {
		t.Error("a blob with the wrong content was staged under the expected hash")
	}
	// Other size: caught before the upload.
	os.WriteFile(f.LocalPath, []byte("short"), 0o644)
	if _, err := c.Sync(context.Background(), []LocalFile{f}, nil, stagingDir, nil); err == nil {
		t.Fatal("sync of a shrunk file succeeded")
	}
}

func TestSyncDroppedConnection(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	big := localFile(t, `C:\k\kubelet.exe`, 8<<20)
	small := localFile(t, `C:\k\small.exe`, 1000)
	files := []LocalFile{small, big}
	// Slow the link so that the drop lands mid-upload.
	h.SetLink(winsim.LinkOptions{BytesPerSecond: 4 << 20})

	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Sync(ctx, files, nil, stagingDir, func(p Progress) {
		if p.File == big.HostPath && p.FileDone >= 1<<20 {
			once.Do(h.DropConnections)
		}
	})
	if err == nil {
		t.Fatal("sync over a dropped connection succeeded")
	}
	t.Logf("sync over a dropped connection: %v", err)
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Errorf("sync over a dropped connection: %T, want *UnreachableError", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("sync did not notice the dropped connection: %v", err)
	}
	if !strings.Contains(err.Error(), h.IP()) || !strings.Contains(err.Error(), big.HostPath) {
		t.Errorf("error %q does not name the host and the file", err)
	}
	h.SetLink(winsim.LinkOptions{})

	// Retry on a new connection: the small blob is already staged, the big
	// one is uploaded whole (cut off before more than resumeMargin arrived,
	// its .part is not worth continuing; resume_test.go continues one).
	c2 := connect(t, h.options())
	res, err := c2.Sync(context.Background(), files, nil, stagingDir, nil)
	if err != nil {
		t.Fatalf("retried sync: %v", err)
	}
	if res != (SyncResult{BytesUploaded: big.Size, FilesUploaded: 1, FilesSkipped: 1, FilesAlreadyStaged: 1}) {
		t.Errorf("retried sync = %+v, want only the big file uploaded", res)
	}
	if !bytes.Equal(staged(t, h, big.SHA256), localContent(t, big)) {
		t.Error("the staged blob differs from the local content")
	}
}

func TestSyncCancelled(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	big := localFile(t, `C:\k\kubelet.exe`, 8<<20)
	h.SetLink(winsim.LinkOptions{BytesPerSecond: 4 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	_, err := c.Sync(ctx, []LocalFile{big}, nil, stagingDir, func(p Progress) {
		if p.FileDone >= 1<<20 {
			cancel()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("cancelled sync: %v, want an error saying it was stopped", err)
	}
	h.SetLink(winsim.LinkOptions{})
	// The same client syncs again (a new SFTP session).
	if _, err := c.Sync(context.Background(), []LocalFile{big}, nil, stagingDir, nil); err != nil {
		t.Fatalf("sync after a cancelled one: %v", err)
	}
}

func TestSyncStagingFolderIsAFile(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	os.MkdirAll(must(h.Path(`C:\k`)), 0o755)
	os.WriteFile(must(h.Path(`C:\k\staging`)), []byte("x"), 0o644)
	_, err := c.Sync(context.Background(), []LocalFile{content(`C:\k\a`, "a")}, nil, stagingDir, nil)
	if err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Fatalf("sync into a file: %v, want an error saying the staging folder is a file", err)
	}
}

func TestStat(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	ctx := context.Background()
	p := must(h.Path(`C:\k\x.txt`))
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("hello"), 0o644)
	if fi, err := c.Stat(ctx, `C:\k\x.txt`); err != nil || fi.Size() != 5 {
		t.Errorf("Stat = %v, %v", fi, err)
	}
	if _, err := c.Stat(ctx, `C:\k\missing`); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing file: %v, want fs.ErrNotExist", err)
	}
}
