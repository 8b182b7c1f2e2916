package blob

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder the agent runs on staged
// blobs (outside input: anything may have written the staging folder). It
// must never panic, never write more than the size it is given, and accept
// only bytes that decode to exactly the content it was asked for.
func FuzzDecode(f *testing.F) {
	content := []byte("winnode-agent.exe winnode-agent.exe winnode-agent.exe")
	var enc bytes.Buffer
	if _, _, err := Compress(&enc, bytes.NewReader(content)); err != nil {
		f.Fatal(err)
	}
	f.Add(enc.Bytes(), int64(len(content)))
	f.Add(enc.Bytes()[:enc.Len()-3], int64(len(content)))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0}, int64(0))
	f.Add([]byte{}, int64(0))
	f.Add(content, int64(len(content)))
	sum := digest(content)
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		if size > 1<<20 {
			size %= 1 << 20
		}
		var out bytes.Buffer
		err := Decode(&out, bytes.NewReader(data), Zstd, size, sum)
		if size >= 0 && int64(out.Len()) > size+1 {
			t.Fatalf("wrote %d bytes for a content of %d", out.Len(), size)
		}
		if err == nil && !bytes.Equal(out.Bytes(), content) {
			t.Fatalf("accepted %x, which decodes to %q", data, out.Bytes())
		}
	})
}
