// Package blob encodes payload files for their trip to a host and decodes
// them there. A payload file is compressed once, when the payload is built
// (internal/payload, Write), and the compressed copy is what every host is
// sent, in the blob stream (stream.go) the agent's `receive` reads; the
// agent decodes it while the bytes arrive (internal/agent, receive.go) and
// checks the content it gets against the sha256 and size it was given.
//
// The encoding is zstd (github.com/klauspost/compress/zstd, the pure-Go
// implementation the Kubernetes ecosystem already uses, e.g. in containerd
// and the Prometheus client): it decompresses at well over a gigabyte per
// second, so the host's CPU is never what a transfer waits for, and it
// shrinks Go programs to about a third.
package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Zstd is the name of the zstd encoding, in the payload manifest and in
// plans (plan.File.Encoding).
const Zstd = "zstd"

// Suffix is what a compressed copy's name adds to its file's name in a
// payload folder: kubelet.exe.zst.
const Suffix = ".zst"

// Level is the zstd level payloads are compressed at. A payload is
// compressed once and sent to every host, so a slower level that makes it
// smaller pays for itself; SpeedBetterCompression (about zstd level 7) is
// the best trade measured on the real payload (docs/install.md,
// "Compressed transfer").
var Level = zstd.SpeedBetterCompression

// maxWindow bounds the memory a decoder may need. The encoder at Level
// uses windows of at most 8 MiB; a frame asking for more than this was not
// made by Compress and is refused rather than given the memory.
const maxWindow = 32 << 20

// Compress writes the zstd encoding of src to dst. It returns the bytes
// read from src and the bytes written to dst.
func Compress(dst io.Writer, src io.Reader) (in, out int64, err error) {
	cw := &countingWriter{w: dst}
	enc, err := zstd.NewWriter(cw, zstd.WithEncoderLevel(Level), zstd.WithEncoderCRC(true))
	if err != nil {
		return 0, 0, fmt.Errorf("zstd encoder: %w", err)
	}
	in, err = io.Copy(enc, src)
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	return in, cw.n, err
}

// Decode writes to dst the content that src, encoded with encoding,
// decodes to, and checks that content is exactly size bytes with the given
// sha256 (lower-case hex). It stops reading once the content is longer than
// size, so a blob that expands without bound costs no more than size bytes
// of output. An error says what does not match; dst may then hold part of
// the content, and the caller discards it.
func Decode(dst io.Writer, src io.Reader, encoding string, size int64, sum string) error {
	if encoding != Zstd {
		return fmt.Errorf("encoding %q is not supported (want %q)", encoding, Zstd)
	}
	if size < 0 {
		return fmt.Errorf("negative size %d", size)
	}
	// The default concurrency decodes blocks ahead on other cores (about
	// twice as fast as one decoder on a 2-core machine).
	dec, err := zstd.NewReader(src,
		zstd.WithDecoderMaxWindow(maxWindow),
		zstd.WithDecoderMaxMemory(maxWindow*2),
	)
	if err != nil {
		return fmt.Errorf("zstd decoder: %w", err)
	}
	defer dec.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), io.LimitReader(dec, size+1))
	switch {
	case err != nil:
		return fmt.Errorf("not a valid %s stream (it failed after %d bytes of content): %w", Zstd, n, err)
	case n > size:
		return fmt.Errorf("decodes to more than the %d bytes of content expected", size)
	case n < size:
		return fmt.Errorf("decodes to %d bytes of content, not %d", n, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("decodes to content with sha256 %s, not %s", got, sum)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
