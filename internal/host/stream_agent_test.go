package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pblob "github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
)

// stagedNames lists the staging folder of a simulated host.
func stagedNames(t *testing.T, h *simHost) []string {
	t.Helper()
	entries, err := os.ReadDir(must(h.Path(stagingDir)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// stagedSum is the sha256 of the staged blob name on a simulated host, or
// "" when it is not there.
func stagedSum(t *testing.T, h *simHost, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(must(h.Path(stagingDir)), name))
	if err != nil {
		return ""
	}
	return sum(data)
}

// TestPipelinedSyncThenApply: the agent's receive stages an encoded file's
// content, decoded as it arrived (no encoded blob is left to decode), and
// a plain file's; apply installs both, and a second sync moves nothing.
func TestPipelinedSyncThenApply(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	ctx := context.Background()
	agent := installAgent(t, c)

	tool := compressibleFile(t, `C:\k\bin\tool.exe`, 4<<20)
	conf := content(`C:\k\etc\tool.conf`, "setting: 1\n")
	res, err := c.SyncPipelined(ctx, agent, []LocalFile{tool, conf}, nil, stagingDir, nil)
	if err != nil {
		t.Fatalf("pipelined sync: %v", err)
	}
	if want := (SyncResult{BytesUploaded: tool.Encoded.Size + conf.Size, FilesUploaded: 2}); res != want {
		t.Errorf("pipelined sync = %+v, want %+v", res, want)
	}
	if got := stagedNames(t, h); len(got) != 2 || stagedSum(t, h, tool.SHA256) != tool.SHA256 || stagedSum(t, h, conf.SHA256) != conf.SHA256 {
		t.Fatalf("staged %v, want exactly the two contents, each named by its hash", got)
	}

	p := plan.Plan{
		SchemaVersion: plan.SchemaVersionEncoded,
		Version:       "test-1",
		StagingDir:    stagingDir,
		Directories:   []plan.Directory{{Path: `C:\k\bin`}, {Path: `C:\k\etc`}},
		Files: []plan.File{
			{Path: tool.HostPath, SHA256: tool.SHA256, Size: tool.Size, Encoding: pblob.Zstd, EncodedSHA256: tool.Encoded.SHA256, EncodedSize: tool.Encoded.Size},
			{Path: conf.HostPath, SHA256: conf.SHA256, Size: conf.Size},
		},
	}
	planJSON, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var applied plan.Result
	if err := c.RunAgent(ctx, agent, []string{"apply", "--plan", "-"}, bytes.NewReader(planJSON), &applied); err != nil {
		t.Fatalf("apply after the pipelined sync: %v", err)
	}
	if got, err := os.ReadFile(must(h.Path(tool.HostPath))); err != nil || sum(got) != tool.SHA256 {
		t.Fatalf("%s after apply: sha256 %s (%v), want %s", tool.HostPath, sum(got), err, tool.SHA256)
	}

	var info plan.Info
	if err := c.RunAgent(ctx, agent, []string{"info"}, nil, &info); err != nil {
		t.Fatal(err)
	}
	res, err = c.SyncPipelined(ctx, agent, []LocalFile{tool, conf}, info.InstalledPlan.Files, stagingDir, nil)
	if want := (SyncResult{FilesSkipped: 2}); err != nil || res != want {
		t.Errorf("second pipelined sync = %+v, %v; want %+v", res, err, want)
	}
}

// TestPipelinedSyncResumes: a pipelined sync cut off midway by a dropped
// connection leaves the encoded blob's .part; the next sync sends only the
// bytes that had not arrived (and resume.go's margin), and the agent
// decodes the kept bytes with the rest to the right content.
func TestPipelinedSyncResumes(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	agent := installAgent(t, c)
	f := compressibleFile(t, `C:\k\kubelet.exe`, 24<<20)
	cutAt := f.Encoded.Size * 2 / 3

	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.SyncPipelined(ctx, agent, []LocalFile{f}, nil, stagingDir, func(p Progress) {
		if p.FileDone >= cutAt {
			once.Do(h.DropConnections)
		}
	})
	if err == nil {
		t.Fatal("pipelined sync over a dropped connection succeeded")
	}
	t.Logf("cut off: %v", err)

	c2 := connect(t, h.options())
	res := retryWhileBusy(t, func() (SyncResult, error) {
		return c2.SyncPipelined(context.Background(), agent, []LocalFile{f}, nil, stagingDir, nil)
	})
	t.Logf("retried sync = %+v: sent %.3f of the encoded blob (a restart from zero sends 1.000)", res, float64(res.BytesUploaded)/float64(f.Encoded.Size))
	if res.BytesUploaded+res.BytesResumed != f.Encoded.Size || res.FilesUploaded != 1 {
		t.Errorf("retried sync = %+v: sent and kept bytes do not add up to the blob's %d", res, f.Encoded.Size)
	}
	if res.BytesResumed == 0 || res.BytesUploaded > f.Encoded.Size-cutAt+2*resumeMargin {
		t.Errorf("retried sync = %+v: want only the bytes after about %d sent", res, cutAt)
	}
	if got := stagedNames(t, h); len(got) != 1 || stagedSum(t, h, f.SHA256) != f.SHA256 {
		t.Errorf("staged %v, want only the decoded content %s", got, f.SHA256)
	}
}

// retryWhileBusy runs sync until the agent of a dropped connection has
// released its lock (as the operator retries a Busy host), at most 30
// seconds.
func retryWhileBusy(t *testing.T, sync func() (SyncResult, error)) SyncResult {
	t.Helper()
	var res SyncResult
	testkit.Eventually(t, 30*time.Second, "the dropped connection's agent to release its lock", func() (bool, string) {
		var err error
		res, err = sync()
		var ae *AgentError
		if errors.As(err, &ae) && ae.Err.Code == plan.ErrBusy {
			return false, err.Error()
		}
		if err != nil {
			t.Fatalf("retried sync: %v", err)
		}
		return true, ""
	})
	return res
}

// TestPipelinedSyncRefusesGarbledBlobs: a .part whose kept bytes are wrong
// (random bytes, as a damaged disk or a tampered file leaves) is continued,
// and the agent refuses the blob: an encoded one as soon as its bytes do
// not decode, a plain one when its bytes do not hash to its name. The
// error is the agent's Transfer error naming the file, nothing is staged
// (no content, no .part, no half-decoded file), and the next sync sends
// the blob whole.
func TestPipelinedSyncRefusesGarbledBlobs(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	agent := installAgent(t, c)
	ctx := context.Background()
	encoded := compressibleFile(t, `C:\k\kubelet.exe`, 16<<20)
	plain := localFile(t, `C:\k\kube-proxy.exe`, 6<<20)
	for _, tc := range []struct {
		f    LocalFile
		blob string
		size int64
	}{
		{encoded, encoded.Encoded.SHA256, encoded.Encoded.Size},
		{plain, plain.SHA256, plain.Size},
	} {
		garbage := make([]byte, tc.size*9/10)
		rand.Read(garbage)
		if err := os.MkdirAll(must(h.Path(stagingDir)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(must(h.Path(stagingDir)), tc.blob+".part"), garbage, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := c.SyncPipelined(ctx, agent, []LocalFile{tc.f}, nil, stagingDir, nil)
		var ae *AgentError
		if !errors.As(err, &ae) || ae.Err.Code != plan.ErrTransfer || ae.Err.File != tc.f.HostPath || !strings.Contains(ae.Err.Message, "deleted, send it again") {
			t.Fatalf("sync over a garbled .part of %s: %v, want the agent's %s error naming the file", tc.f.HostPath, err, plan.ErrTransfer)
		}
		t.Logf("refused: %v", err)
		if got := stagedNames(t, h); len(got) != 0 {
			t.Fatalf("staged after a garbled blob: %v, want nothing", got)
		}
		res, err := c.SyncPipelined(ctx, agent, []LocalFile{tc.f}, nil, stagingDir, nil)
		if err != nil || res.BytesUploaded != tc.size || res.BytesResumed != 0 {
			t.Fatalf("sync after the garbled blob was deleted = %+v, %v; want the %d bytes sent whole", res, err, tc.size)
		}
		if stagedSum(t, h, tc.f.SHA256) != tc.f.SHA256 {
			t.Fatalf("%s is not staged with its content after the second sync", tc.f.HostPath)
		}
		if err := os.RemoveAll(must(h.Path(stagingDir))); err != nil {
			t.Fatal(err)
		}
	}
}
