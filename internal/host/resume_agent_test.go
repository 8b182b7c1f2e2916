package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

// TestResumedBadPartConverges: what guards a resumed upload is the agent.
// A .part whose kept prefix is wrong (here: random bytes, as a corrupted
// disk or a tampered file would leave) is continued and renamed with the
// right size; the agent refuses it, deletes it, and the next sync uploads
// it whole, after which the apply succeeds. Without the deletion, every
// later sync would skip the blob (right size) and every apply would fail.
func TestResumedBadPartConverges(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	ctx := context.Background()

	agent := installAgent(t, c)

	tool := localFile(t, `C:\k\bin\tool.exe`, 8<<20)
	p := plan.Plan{
		SchemaVersion: plan.SchemaVersion,
		Version:       "test-1",
		Directories:   []plan.Directory{{Path: `C:\k\bin`}},
		Files:         []plan.File{{Path: tool.HostPath, SHA256: tool.SHA256, Size: tool.Size}},
	}
	planJSON, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	apply := func() error {
		var res plan.Result
		return c.RunAgent(ctx, agent, []string{"apply", "--plan", "-"}, bytes.NewReader(planJSON), &res)
	}
	staging := must(h.Path(plan.DefaultStagingDir))
	if err := os.MkdirAll(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, tool.Size*9/10)
	rand.Read(garbage)
	if err := os.WriteFile(staging+"/"+tool.SHA256+".part", garbage, 0o644); err != nil {
		t.Fatal(err)
	}

	files := []LocalFile{tool}
	res, err := c.Sync(ctx, files, nil, plan.DefaultStagingDir, nil)
	if err != nil {
		t.Fatalf("sync over a bad .part: %v", err)
	}
	if res.BytesResumed == 0 || res.BytesUploaded+res.BytesResumed != tool.Size {
		t.Fatalf("sync over a bad .part = %+v, want it continued", res)
	}

	err = apply()
	var pe *plan.Error
	if !errors.As(err, &pe) || pe.Code != plan.ErrFileMissing || !strings.Contains(pe.Message, "deleted; upload it again") {
		t.Fatalf("apply with a bad blob: %v, want %s saying the blob was deleted", err, plan.ErrFileMissing)
	}
	if _, err := os.Stat(staging + "/" + tool.SHA256); err == nil {
		t.Fatal("the bad blob is still staged")
	}

	res, err = c.Sync(ctx, files, nil, plan.DefaultStagingDir, nil)
	if err != nil {
		t.Fatalf("sync after the agent deleted the bad blob: %v", err)
	}
	if want := (SyncResult{BytesUploaded: tool.Size, FilesUploaded: 1}); res != want {
		t.Errorf("sync after the agent deleted the bad blob = %+v, want %+v", res, want)
	}
	if err := apply(); err != nil {
		t.Fatalf("apply after the blob was uploaded again: %v", err)
	}
	if got, err := os.ReadFile(must(h.Path(tool.HostPath))); err != nil || !bytes.Equal(got, localContent(t, tool)) {
		t.Errorf("%s after apply is not the local content (%v)", tool.HostPath, err)
	}
}
