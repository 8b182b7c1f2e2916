//go:build windows

package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
)

// TestNativeReceive runs receive on Windows' own files (under Wine in the
// Wine tier): a stream cut off keeps the .part, the next one resumes it
// (truncate, read back, continue), the decoded content is renamed to its
// name and the .part deleted once closed; a garbled blob is refused naming
// its file, with nothing left staged.
func TestNativeReceive(t *testing.T) {
	a := &Agent{Platform: openTestPlatform(t), Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	// Not t.TempDir: its cleanup uses os.RemoveAll, which fails under Wine.
	tmp, err := os.MkdirTemp("", "winnode-receive-")
	if err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(tmp, "staging")

	content := bytes.Repeat([]byte("winnode-agent.exe receive "), 40000)
	rand.Read(content[len(content)/2 : len(content)/2+4096])
	var enc bytes.Buffer
	if _, _, err := blob.Compress(&enc, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	hdr := blob.Header{Name: hexSum(enc.Bytes()), Size: int64(enc.Len()), Encoding: blob.Zstd,
		ContentSHA256: hexSum(content), ContentSize: int64(len(content)), File: `C:\k\kubelet.exe`}
	stream := func(h blob.Header, body []byte, end bool) io.Reader {
		var b bytes.Buffer
		if err := blob.WriteHeader(&b, h); err != nil {
			t.Fatal(err)
		}
		b.Write(body)
		if end {
			blob.WriteHeader(&b, blob.Header{End: true})
		}
		return &b
	}
	cut := enc.Len() / 2
	_, err = a.Receive(context.Background(), staging, stream(hdr, enc.Bytes()[:cut], false))
	var pe *plan.Error
	if !errors.As(err, &pe) || pe.Code != plan.ErrTransfer || pe.File != hdr.File {
		t.Fatalf("receive of a cut-off stream: %v, want %s naming %s", err, plan.ErrTransfer, hdr.File)
	}
	part := filepath.Join(staging, hdr.Name+".part")
	if fi, err := os.Stat(part); err != nil || fi.Size() != int64(cut) {
		t.Fatalf("the .part after the cut: %v, %v; want %d bytes", fi, err, cut)
	}

	resumed := hdr
	resumed.Offset = int64(cut - 100) // the operator's margin: fewer bytes kept than arrived
	res, err := a.Receive(context.Background(), staging, stream(resumed, enc.Bytes()[resumed.Offset:], true))
	if err != nil {
		t.Fatalf("resumed receive: %v", err)
	}
	if len(res.Blobs) != 1 || res.Blobs[0].ResumedFrom != resumed.Offset {
		t.Fatalf("resumed receive = %+v", res)
	}
	if got, err := os.ReadFile(filepath.Join(staging, hdr.ContentSHA256)); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("the staged content is not the file's (%v)", err)
	}
	assertStaged(t, staging, hdr.ContentSHA256)

	garbled := append([]byte(nil), enc.Bytes()...)
	garbled[len(garbled)/2] ^= 0xff
	os.Remove(filepath.Join(staging, hdr.ContentSHA256))
	_, err = a.Receive(context.Background(), staging, stream(hdr, garbled, true))
	if !errors.As(err, &pe) || pe.Code != plan.ErrTransfer || pe.File != hdr.File || !strings.Contains(pe.Message, "deleted") {
		t.Fatalf("receive of a garbled blob: %v, want %s naming %s", err, plan.ErrTransfer, hdr.File)
	}
	assertStaged(t, staging)
}

// assertStaged checks that the staging folder holds exactly names.
func assertStaged(t *testing.T, staging string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(staging)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("staged %v, want %v", got, names)
	}
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
