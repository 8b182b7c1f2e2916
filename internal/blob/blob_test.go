package blob

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func compressed(t testing.TB, content []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	in, n, err := Compress(&out, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	if in != int64(len(content)) || n != int64(out.Len()) {
		t.Fatalf("Compress counted %d in, %d out; want %d, %d", in, n, len(content), out.Len())
	}
	return out.Bytes()
}

func TestRoundTrip(t *testing.T) {
	content := []byte(strings.Repeat("kubelet.exe is a Go program; ", 10000))
	enc := compressed(t, content)
	if len(enc)*10 > len(content) {
		t.Fatalf("%d bytes compressed to %d: want under a tenth", len(content), len(enc))
	}
	var out bytes.Buffer
	if err := Decode(&out, bytes.NewReader(enc), Zstd, int64(len(content)), digest(content)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), content) {
		t.Fatal("the decoded content differs")
	}
	// Empty content is a valid frame too.
	if err := Decode(&out, bytes.NewReader(compressed(t, nil)), Zstd, 0, digest(nil)); err != nil {
		t.Fatalf("empty content: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	content := []byte(strings.Repeat("kube-proxy.exe ", 5000))
	enc := compressed(t, content)
	size, sum := int64(len(content)), digest(content)
	flipped := bytes.Clone(enc)
	flipped[len(flipped)/2] ^= 0x40
	other := []byte(strings.Repeat("kube-proxy.exX ", 5000))
	cases := []struct {
		name     string
		blob     []byte
		encoding string
		size     int64
		sum      string
		want     string
	}{
		{"corrupted byte", flipped, Zstd, size, sum, ""},
		{"truncated", enc[:len(enc)/2], Zstd, size, sum, "not a valid zstd stream"},
		{"not zstd", content, Zstd, size, sum, "not a valid zstd stream"},
		{"trailing garbage", append(bytes.Clone(enc), "garbage"...), Zstd, size, sum, "not a valid zstd stream"},
		{"other content", compressed(t, other), Zstd, size, sum, "decodes to content with sha256 " + digest(other)},
		{"longer than said", enc, Zstd, size - 1, sum, "more than the 74999 bytes"},
		{"shorter than said", enc, Zstd, size + 1, sum, "decodes to 75000 bytes of content, not 75001"},
		{"unknown encoding", enc, "gzip", size, sum, `encoding "gzip" is not supported`},
		{"negative size", enc, Zstd, -1, sum, "negative size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Decode(&bytes.Buffer{}, bytes.NewReader(c.blob), c.encoding, c.size, c.sum)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Decode = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// A frame that claims a window larger than Compress ever uses is refused
// instead of being given the memory.
func TestDecodeRefusesHugeWindow(t *testing.T) {
	content := bytes.Repeat([]byte{'a'}, 1<<20)
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithWindowSize(256<<20), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(content)
	enc.Close()
	err = Decode(&bytes.Buffer{}, &out, Zstd, int64(len(content)), digest(content))
	if err == nil || !strings.Contains(err.Error(), "not a valid zstd stream") {
		t.Fatalf("Decode of a 256 MiB-window frame = %v, want refused", err)
	}
}
