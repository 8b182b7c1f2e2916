package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	pblob "github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winsim"
)

// BenchmarkPipelinedSync sends a compressed Go program (this test binary)
// to a simulated host on a 1 Gbit/s link and applies a plan that installs
// it, two ways, one after the other in each iteration: over SFTP, the
// agent decoding and hashing it at apply (Sync, as before issue 29), and
// streamed to the agent's receive, which decodes and hashes it while it
// arrives (SyncPipelined). It reports the pipelined time over the SFTP
// one (sync and apply together).
func BenchmarkPipelinedSync(b *testing.B) {
	h := newSimHost(b)
	c, err := Connect(context.Background(), h.options())
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	agent := installAgent(b, c)
	f := compressedSelf(b)
	h.SetLink(winsim.LinkOptions{BytesPerSecond: 125_000_000})
	defer h.SetLink(winsim.LinkOptions{})

	round := func(i int, pipelined bool) time.Duration {
		g := f
		g.HostPath = fmt.Sprintf(`C:\k\bench\%d\program.exe`, i) // nothing in place yet
		planJSON, err := json.Marshal(plan.Plan{
			SchemaVersion: plan.SchemaVersionEncoded, Version: fmt.Sprintf("bench-%d", i), StagingDir: stagingDir,
			Directories: []plan.Directory{{Path: fmt.Sprintf(`C:\k\bench\%d`, i)}},
			Files: []plan.File{{Path: g.HostPath, SHA256: g.SHA256, Size: g.Size,
				Encoding: pblob.Zstd, EncodedSHA256: g.Encoded.SHA256, EncodedSize: g.Encoded.Size}},
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		if pipelined {
			_, err = c.SyncPipelined(ctx, agent, []LocalFile{g}, nil, stagingDir, nil)
		} else {
			_, err = c.Sync(ctx, []LocalFile{g}, nil, stagingDir, nil)
		}
		if err != nil {
			b.Fatalf("sync (pipelined: %v): %v", pipelined, err)
		}
		var res plan.Result
		if err := c.RunAgent(ctx, agent, []string{"apply", "--plan", "-"}, bytes.NewReader(planJSON), &res); err != nil {
			b.Fatalf("apply (pipelined: %v): %v", pipelined, err)
		}
		return time.Since(start)
	}
	var sftpTime, pipelinedTime time.Duration
	for i := 0; b.Loop(); i++ {
		sftpTime += round(2*i, false)
		pipelinedTime += round(2*i+1, true)
	}
	b.ReportMetric(float64(f.Size), "content_bytes")
	b.ReportMetric(pipelinedTime.Seconds()/sftpTime.Seconds(), "pipelined_time/sftp_then_decode_time")
}

// compressedSelf describes this test binary and its zstd copy, as a
// payload file with a compressed copy.
func compressedSelf(b *testing.B) LocalFile {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "program.exe")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	var enc bytes.Buffer
	if _, _, err := pblob.Compress(&enc, bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p+pblob.Suffix, enc.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return LocalFile{LocalPath: p, HostPath: `C:\k\program.exe`, SHA256: sum(data), Size: int64(len(data)),
		Encoded: &Encoded{LocalPath: p + pblob.Suffix, SHA256: sum(enc.Bytes()), Size: int64(enc.Len())}}
}
