package payload

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/blob"
)

// BenchmarkBuiltPayloadCompression compresses the real payload (make
// payload; WINNODE_PAYLOAD_DIR) as Write does when it is built, and
// reports, as ratios:
//
//   - <file>_compressed/size and compressed/size for the whole payload;
//   - write_time/transfer_1gbit: Write's time (hashing, compressing and
//     decoding back every file) over the time the uncompressed payload
//     takes on a 1 Gbit/s link: below 1, compressing once costs less than
//     sending the payload once uncompressed;
//   - decode_time/transfer_1gbit: the agent's decoding of every copy over
//     the time the compressed copies take on that link: below 1, decoding
//     on the host never waits on more than the link does;
//   - write_time/sha256_time and decode_time/sha256_time: the same times
//     over hashing the whole payload once on the same machine in the same
//     run (what Load does at every operator start, and the agent for every
//     file it places): figures that hold when the machine is shared and
//     slower than usual, as the ones above do not.
func BenchmarkBuiltPayloadCompression(b *testing.B) {
	dir := os.Getenv(PayloadDirEnv)
	if dir == "" {
		b.Skipf("%s is not set: run `make payload` and set it to measure the real payload", PayloadDirEnv)
	}
	m, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	MeasureCompression(b, dir, m.Files)
}

// MeasureCompression measures compressing the files of dir listed in
// files (only Name, HostPath and Version are used) into a copy of the
// folder; see BenchmarkBuiltPayloadCompression for the figures.
func MeasureCompression(b *testing.B, dir string, files []File) {
	var entries []File
	for _, f := range files {
		entries = append(entries, File{Name: f.Name, HostPath: f.HostPath, Version: f.Version})
	}
	const gbitPerSecond = 1e9 / 8 // bytes per second
	var writeTime, decodeTime, hashTime time.Duration
	var m *Manifest
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		work := b.TempDir()
		for _, f := range entries {
			if err := os.Link(filepath.Join(dir, f.Name), filepath.Join(work, f.Name)); err != nil {
				copyInto(b, filepath.Join(dir, f.Name), filepath.Join(work, f.Name))
			}
		}
		start := time.Now()
		for _, f := range entries {
			if _, _, err := digest(filepath.Join(work, f.Name)); err != nil {
				b.Fatal(err)
			}
		}
		hashTime += time.Since(start)
		b.StartTimer()
		start = time.Now()
		if err := Write(work, entries); err != nil {
			b.Fatal(err)
		}
		writeTime += time.Since(start)
		b.StopTimer()
		var err error
		if m, err = Load(work); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		for _, f := range m.Files {
			if f.Encoding == "" {
				continue
			}
			in, err := os.Open(filepath.Join(work, f.EncodedName()))
			if err != nil {
				b.Fatal(err)
			}
			err = blob.Decode(io.Discard, in, f.Encoding, f.Size, f.SHA256)
			in.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
		decodeTime += time.Since(start)
		b.StartTimer()
	}
	var size, sent int64
	for _, f := range m.Files {
		n := f.Size
		if f.Encoding != "" {
			n = f.EncodedSize
		}
		size += f.Size
		sent += n
		b.ReportMetric(float64(n)/float64(max(f.Size, 1)), f.Name+"_compressed/size")
	}
	b.ReportMetric(float64(sent)/float64(size), "compressed/size")
	perRun := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(perRun(writeTime)/(float64(size)/gbitPerSecond), "write_time/transfer_1gbit")
	b.ReportMetric(perRun(decodeTime)/(float64(sent)/gbitPerSecond), "decode_time/transfer_1gbit")
	b.ReportMetric(writeTime.Seconds()/hashTime.Seconds(), "write_time/sha256_time")
	b.ReportMetric(decodeTime.Seconds()/hashTime.Seconds(), "decode_time/sha256_time")
	b.Logf("%d bytes compress to %d (%.3f)", size, sent, float64(sent)/float64(size))
}

func copyInto(b *testing.B, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		b.Fatal(err)
	}
}
