//go:build !windows

package agent_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
)

// encodeBinaries makes the test plan's service binaries travel compressed,
// as payload files do: the plan becomes SchemaVersionEncoded, each binary
// names its zstd blob, and the blobs (by the hash of their bytes) are
// returned; a.conf stays as it is.
func encodeBinaries(t *testing.T, tp *testPlan) map[string][]byte {
	t.Helper()
	tp.plan.SchemaVersion = plan.SchemaVersionEncoded
	blobs := map[string][]byte{}
	for i := range tp.plan.Files {
		f := &tp.plan.Files[i]
		if !strings.HasSuffix(f.Path, ".exe") {
			continue
		}
		enc := encoded(t, tp.contents[f.Path])
		sum := sha256.Sum256(enc)
		f.Encoding, f.EncodedSHA256, f.EncodedSize = plan.EncodingZstd, hex.EncodeToString(sum[:]), int64(len(enc))
		blobs[f.EncodedSHA256] = enc
	}
	if len(blobs) != 1 {
		t.Fatalf("the three binaries share one content, so one blob; got %d", len(blobs))
	}
	return blobs
}

// encodings holds the zstd encoding of each content encodeBinaries met,
// by its sha256: the binaries are this test binary (tens of MB), which
// every test of compressed blobs encodes, and encoding it takes minutes
// under the race detector.
var encodings = struct {
	sync.Mutex
	by map[[32]byte][]byte
}{by: map[[32]byte][]byte{}}

// encoded is content as one zstd frame with its checksum, the format
// blob.Compress writes, at zstd's fastest level (what the agent decodes
// does not depend on the level; the payload's level costs minutes here).
func encoded(t *testing.T, content []byte) []byte {
	t.Helper()
	key := sha256.Sum256(content)
	encodings.Lock()
	defer encodings.Unlock()
	if enc, ok := encodings.by[key]; ok {
		return enc
	}
	w, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	enc := w.EncodeAll(content, nil)
	encodings.by[key] = enc
	return enc
}

func (s *simHost) stageBlobs(blobs map[string][]byte) {
	for name, data := range blobs {
		s.put(plan.DefaultStagingDir+`\`+name, data)
	}
}

// The agent decodes compressed blobs while staging: every file is placed
// with the plan's content, and the staging folder is left empty.
func TestApplyDecodesCompressedBlobs(t *testing.T) {
	h := newSimHost(t)
	tp := newTestPlan(t, "v1")
	blobs := encodeBinaries(t, tp)
	h.stageBlobs(blobs)
	h.put(plan.DefaultStagingDir+`\`+tp.plan.Files[0].SHA256, tp.contents[`C:\k\a.conf`])
	res := h.apply(tp.plan)
	for _, name := range []string{"svc-a", "svc-b", "svc-c"} {
		if got := byName(res)[name]; got.State != "Running" {
			t.Errorf("%s: %+v, want Running", name, got)
		}
	}
	for path, want := range tp.contents {
		local, _ := h.host.Path(path)
		if got, err := os.ReadFile(local); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not the plan's content (%v)", path, err)
		}
	}
	staging, _ := h.host.Path(plan.DefaultStagingDir)
	if left, _ := os.ReadDir(staging); len(left) != 0 {
		t.Errorf("the staging folder still holds %v", left)
	}
	// The agent's manifest records the content's hash, not the blob's.
	info := h.info()
	if got := info.InstalledPlan.Files[`C:\k\svc-c.exe`]; got != tp.plan.Files[3].SHA256 {
		t.Errorf("installed manifest lists svc-c.exe as %s, want its content's sha256 %s", got, tp.plan.Files[3].SHA256)
	}
}

// A compressed blob that is damaged, or that decodes to something else
// than the file's content, is refused with an error naming the file, and
// deleted so that the operator's next sync uploads it again; the apply
// after that succeeds.
func TestApplyRefusesCorruptCompressedBlob(t *testing.T) {
	cases := []struct {
		name string
		// corrupt returns the blob to stage under the plan's encodedSHA256.
		corrupt func(t *testing.T, good []byte, tp *testPlan) []byte
		want    []string
	}{
		{"damaged bytes", func(t *testing.T, good []byte, _ *testPlan) []byte {
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 0x01
			return bad
		}, []string{"staged blob has sha256", "deleted; upload it again"}},
		{"decodes to other content", func(t *testing.T, _ []byte, tp *testPlan) []byte {
			// A blob that is what its name says, but of another content: the
			// plan's two hashes disagree (say, a hand-edited manifest).
			var other bytes.Buffer
			if _, _, err := blob.Compress(&other, strings.NewReader("#!/bin/sh\necho not the binary\n")); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(other.Bytes())
			for i := range tp.plan.Files {
				if tp.plan.Files[i].Encoding != "" {
					tp.plan.Files[i].EncodedSHA256 = hex.EncodeToString(sum[:])
				}
			}
			return other.Bytes()
		}, []string{"is not the file's content", "decodes to", "deleted; upload it again"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newSimHost(t)
			tp := newTestPlan(t, "v1")
			blobs := encodeBinaries(t, tp)
			var good []byte
			for _, b := range blobs {
				good = b
			}
			goodPlan := *tp.plan
			goodPlan.Files = append([]plan.File(nil), tp.plan.Files...)
			bad := c.corrupt(t, good, tp)
			badName := tp.plan.Files[1].EncodedSHA256
			h.put(plan.DefaultStagingDir+`\`+badName, bad)
			h.put(plan.DefaultStagingDir+`\`+tp.plan.Files[0].SHA256, tp.contents[`C:\k\a.conf`])

			data, _ := json.Marshal(tp.plan)
			h.put(`C:\k\plan.json`, data)
			out, code := h.agent("apply", "--plan", `C:\k\plan.json`)
			var fail plan.ErrorDocument
			if code != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrFileMissing || fail.Error.File != `C:\k\svc-a.exe` {
				t.Fatalf("apply with a bad compressed blob: exit %d, want FileMissing naming C:\\k\\svc-a.exe\n%s", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(fail.Error.Message, w) {
					t.Errorf("error %q does not say %q", fail.Error.Message, w)
				}
			}
			if h.exists(plan.DefaultStagingDir + `\` + badName) {
				t.Error("the bad blob is still staged: the next sync would skip it")
			}
			if h.exists(`C:\k\svc-a.exe`) {
				t.Error("svc-a.exe was placed from a bad blob")
			}
			staging, _ := h.host.Path(plan.DefaultStagingDir)
			entries, _ := os.ReadDir(staging)
			for _, e := range entries {
				if strings.Contains(e.Name(), "decoding") {
					t.Errorf("a partly decoded file was left: %s", e.Name())
				}
			}

			// The operator's next sync stages the right blob: apply converges.
			h.stageBlobs(blobs)
			res := h.applyOnly(&goodPlan)
			if got := byName(res)["svc-c"]; got.State != "Running" {
				t.Errorf("svc-c after the retry: %+v, want Running", got)
			}
		})
	}
}
