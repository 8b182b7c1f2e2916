package host

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/winnode/winnode/internal/winsim"
)

// BenchmarkSync64MiB uploads a 64 MiB file to a simulated host; go test
// reports the throughput (MB/s) per link.
func BenchmarkSync64MiB(b *testing.B) {
	h := newSimHost(b)
	c, err := Connect(context.Background(), h.options())
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	f := localFile(b, `C:\k\big.exe`, 64<<20)
	for _, link := range []struct {
		name string
		opts winsim.LinkOptions
	}{
		{"loopback", winsim.LinkOptions{}},
		{"1Gbit", winsim.LinkOptions{BytesPerSecond: 125_000_000}},
	} {
		b.Run(link.name, func(b *testing.B) {
			h.SetLink(link.opts)
			defer h.SetLink(winsim.LinkOptions{})
			b.SetBytes(f.Size)
			for i := 0; b.Loop(); i++ {
				staging := fmt.Sprintf(`C:\bench\%s-%d`, link.name, i) // a new folder: nothing staged yet
				res, err := c.Sync(context.Background(), []LocalFile{f}, nil, staging, nil)
				if err != nil {
					b.Fatalf("Sync: %v", err)
				}
				if res.BytesUploaded != f.Size {
					b.Fatalf("Sync moved %d bytes, want %d", res.BytesUploaded, f.Size)
				}
				b.StopTimer()
				os.RemoveAll(must(h.Path(staging)))
				b.StartTimer()
			}
		})
	}
}

// BenchmarkSyncNoop is a sync of a configured host: it must move no bytes.
func BenchmarkSyncNoop(b *testing.B) {
	h := newSimHost(b)
	c, err := Connect(context.Background(), h.options())
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	files := []LocalFile{localFile(b, `C:\k\kubelet.exe`, 1<<20), localFile(b, `C:\k\kube-proxy.exe`, 1<<20)}
	if _, err := c.Sync(context.Background(), files, nil, stagingDir, nil); err != nil {
		b.Fatalf("first Sync: %v", err)
	}
	for _, tc := range []struct {
		name      string
		installed map[string]string
	}{
		{"installed", map[string]string{files[0].HostPath: files[0].SHA256, files[1].HostPath: files[1].SHA256}},
		{"staged", nil}, // found in the staging folder: one SFTP stat per file
	} {
		b.Run(tc.name, func(b *testing.B) {
			var moved int64
			for b.Loop() {
				res, err := c.Sync(context.Background(), files, tc.installed, stagingDir, nil)
				if err != nil {
					b.Fatalf("Sync: %v", err)
				}
				moved += res.BytesUploaded
			}
			b.ReportMetric(float64(moved), "bytes-moved")
			if moved != 0 {
				b.Fatalf("a no-op sync moved %d bytes", moved)
			}
		})
	}
}

// BenchmarkSyncRetry90 is the retry of a 64 MiB upload cut off at 90%:
// "restart" sends it from zero (what a sync did before it resumed .part
// files), "resume" continues the .part. sent/size is the share of the file
// sent again; compare it, and the time, between the two.
func BenchmarkSyncRetry90(b *testing.B) {
	h := newSimHost(b)
	c, err := Connect(context.Background(), h.options())
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	f := localFile(b, `C:\k\kubelet.exe`, 64<<20)
	data, err := os.ReadFile(f.LocalPath)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		kept int64 // bytes in the .part before the retry
	}{
		{"restart", 0},
		{"resume", f.Size * 9 / 10},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var sent int64
			n := 0
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				staging := fmt.Sprintf(`C:\bench\%s-%d`, tc.name, i)
				dir := must(h.Path(staging))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				if tc.kept > 0 {
					if err := os.WriteFile(dir+"/"+f.SHA256+".part", data[:tc.kept], 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				res, err := c.Sync(context.Background(), []LocalFile{f}, nil, staging, nil)
				if err != nil {
					b.Fatalf("Sync: %v", err)
				}
				sent += res.BytesUploaded
				n++
				b.StopTimer()
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(sent)/float64(n)/float64(f.Size), "sent/size")
		})
	}
}
