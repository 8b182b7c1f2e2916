package host

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	pblob "github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/winsim"
)

// BenchmarkSyncCompressed uploads a Go program (this test binary) to a
// simulated host on a 1 Gbit/s link, as it is and as its zstd copy, and
// reports, as ratios: the bytes the host received on the wire for each
// over the program's size, and the compressed sync's time over the plain
// one's.
func BenchmarkSyncCompressed(b *testing.B) {
	h := newSimHost(b)
	c, err := Connect(context.Background(), h.options())
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	p := filepath.Join(dir, "program.exe")
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
	plain := LocalFile{LocalPath: p, HostPath: `C:\k\program.exe`, SHA256: sum(data), Size: int64(len(data))}
	compressed := plain
	compressed.Encoded = &Encoded{LocalPath: p + pblob.Suffix, SHA256: sum(enc.Bytes()), Size: int64(enc.Len())}

	h.SetLink(winsim.LinkOptions{BytesPerSecond: 125_000_000})
	defer h.SetLink(winsim.LinkOptions{})
	sync := func(f LocalFile, i int) (time.Duration, int64) {
		staging := fmt.Sprintf(`C:\bench\%d`, i) // a new folder: nothing staged yet
		before, _ := h.WireBytes()
		start := time.Now()
		if _, err := c.Sync(context.Background(), []LocalFile{f}, nil, staging, nil); err != nil {
			b.Fatalf("Sync: %v", err)
		}
		d := time.Since(start)
		after, _ := h.WireBytes()
		os.RemoveAll(must(h.Path(staging)))
		return d, after - before
	}
	var plainTime, compressedTime time.Duration
	var plainWire, compressedWire int64
	for i := 0; b.Loop(); i++ {
		d, n := sync(plain, 2*i)
		plainTime, plainWire = plainTime+d, plainWire+n
		d, n = sync(compressed, 2*i+1)
		compressedTime, compressedWire = compressedTime+d, compressedWire+n
	}
	size := float64(plain.Size) * float64(b.N)
	b.ReportMetric(float64(compressed.Encoded.Size)/float64(plain.Size), "copy/size")
	b.ReportMetric(float64(plainWire)/size, "plain_wire/size")
	b.ReportMetric(float64(compressedWire)/size, "compressed_wire/size")
	b.ReportMetric(compressedTime.Seconds()/plainTime.Seconds(), "compressed_time/plain_time")
}
