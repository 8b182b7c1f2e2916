package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// benchPayload is what a benchmark sends to each host.
type benchPayload struct {
	dir    string
	m      *payload.Manifest
	kind   string // "real" or "simulated"
	source string // where the real payload came from, or how it was padded
	opts   simpayload.Options
}

// size is the payload's bytes, all files.
func (p *benchPayload) size() int64 {
	total := int64(0)
	for _, f := range p.m.Files {
		total += f.Size
	}
	return total
}

// realPayloadDir is the folder of a payload built by `make payload`:
// WINNODE_PAYLOAD_DIR (as the payload's own tests find it, and make test
// sets it), else the repository's payload/ when it holds a manifest.
func realPayloadDir() string {
	if dir := os.Getenv(payloadDirEnv); dir != "" {
		return dir
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return ""
	}
	dir := filepath.Join(root, "payload")
	if _, err := os.Stat(filepath.Join(dir, payload.ManifestFile)); err != nil {
		return ""
	}
	return dir
}

// newBenchPayload builds the benchmark's payload: the simulated stand-ins
// (which the simulated hosts run) and, when `make payload` has built the
// real one, the real Windows programs carried beside them (the bytes a real
// host is sent); without it, random padding up to padMB, which no
// compression can shrink.
func newBenchPayload(b *testing.B, w *world, padMB int) *benchPayload {
	b.Helper()
	p := &benchPayload{dir: b.TempDir(), opts: simpayload.Options{AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin}}
	if hl, err := testenv.HostLocal(); err == nil {
		p.opts.HostLocalBinary = hl
	}
	if real := realPayloadDir(); real != "" {
		p.kind, p.source, p.opts.Carry = "real", real, real
	} else {
		base := int64(0)
		for _, f := range w.payload.Files {
			base += f.Size
		}
		p.opts.PaddingBytes = max(int64(padMB)<<20-base, 0)
		p.opts.PaddingSeed = "bench"
		p.kind, p.source = "simulated", "stand-ins padded with random bytes (run `make payload` for the real one)"
	}
	var err error
	if p.m, err = simpayload.Build(p.dir, p.opts); err != nil {
		b.Fatalf("benchmark payload (%s): %v", p.kind, err)
	}
	return p
}

// upgraded is the payload with a new kubelet and kube-proxy (a new
// Kubernetes release: their services restart).
func (p *benchPayload) upgraded(b *testing.B, build string) *benchPayload {
	b.Helper()
	n := *p
	n.dir = b.TempDir()
	n.opts.Build = build
	var err error
	if n.m, err = simpayload.Build(n.dir, n.opts); err != nil {
		b.Fatalf("upgraded benchmark payload: %v", err)
	}
	return &n
}

// payloadDirEnv names the folder `make payload` built (make test and make
// bench set it; internal/payload's tests of the real payload read it too).
const payloadDirEnv = "WINNODE_PAYLOAD_DIR"
