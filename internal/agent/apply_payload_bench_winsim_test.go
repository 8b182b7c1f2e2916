//go:build !windows

package agent_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winsim"
)

// BenchmarkReceiveApplyPayload is the agent's part of one host's first
// configuration with the payload `make payload` built (WINNODE_PAYLOAD_DIR):
// `receive` of every payload file's encoded blob, as the operator's sync
// streams them, then `apply` of a plan of those files into a winsim host's
// C:\. It runs the agent in this process, so that -cpuprofile sees its
// work (docs/performance.md, the agents' CPU per host):
//
//	go test ./internal/agent -run X -bench ReceiveApplyPayload -benchtime 1x -cpuprofile cpu.out
func BenchmarkReceiveApplyPayload(b *testing.B) {
	dir := os.Getenv("WINNODE_PAYLOAD_DIR")
	if dir == "" {
		b.Skip("WINNODE_PAYLOAD_DIR is not set: build the payload with `make payload`")
	}
	m, err := payload.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	p := payloadPlan(m)
	for b.Loop() {
		b.StopTimer()
		h, _ := fixture.SimHost(b, winsim.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		a := &agent.Agent{Platform: agent.NewSimulated(h.SCM(), h.Root()), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		stream := payloadStream(b, dir, m)
		b.StartTimer()
		if _, err := a.Receive(context.Background(), p.Staging(), stream); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Apply(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(payloadBytes(m)), "content-bytes/op")
}

// payloadPlan is a plan of the payload's files alone, as the operator's
// plan names them (plan.Render): each travels encoded.
func payloadPlan(m *payload.Manifest) *plan.Plan {
	p := &plan.Plan{SchemaVersion: plan.SchemaVersionEncoded, Version: "bench", StagingDir: plan.DefaultStagingDir}
	for _, f := range m.Files {
		p.Files = append(p.Files, plan.File{Path: f.HostPath, SHA256: f.SHA256, Size: f.Size,
			Encoding: f.Encoding, EncodedSHA256: f.EncodedSHA256, EncodedSize: f.EncodedSize})
	}
	return p
}

// payloadStream is the blob stream the operator's sync sends a host with
// none of the payload: every file's encoded copy (or the file itself),
// each once.
func payloadStream(b *testing.B, dir string, m *payload.Manifest) io.Reader {
	var parts []io.Reader
	seen := map[string]bool{}
	for _, f := range m.Files {
		if seen[f.SHA256] {
			continue
		}
		seen[f.SHA256] = true
		h := blob.Header{Name: f.SHA256, Size: f.Size, File: f.HostPath}
		name := f.Name
		if f.Encoding != "" {
			h = blob.Header{Name: f.EncodedSHA256, Size: f.EncodedSize, Encoding: f.Encoding, ContentSHA256: f.SHA256, ContentSize: f.Size, File: f.HostPath}
			name = f.EncodedName()
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		var hdr bytes.Buffer
		if err := blob.WriteHeader(&hdr, h); err != nil {
			b.Fatal(err)
		}
		parts = append(parts, &hdr, bytes.NewReader(data))
	}
	var end bytes.Buffer
	if err := blob.WriteHeader(&end, blob.Header{End: true}); err != nil {
		b.Fatal(err)
	}
	return io.MultiReader(append(parts, &end)...)
}

func payloadBytes(m *payload.Manifest) int64 {
	n := int64(0)
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}
