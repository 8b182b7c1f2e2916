package blob

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

var (
	hashA = strings.Repeat("a", 64)
	hashB = strings.Repeat("b", 64)
)

func TestHeaderRoundTrip(t *testing.T) {
	headers := []Header{
		{Name: hashA, Size: 10, File: `C:\k\kubelet.exe`},
		{Name: hashA, Size: 10, Offset: 4, Encoding: Zstd, ContentSHA256: hashB, ContentSize: 30, File: `C:\k\kubelet.exe`},
		{Name: hashA, File: `C:\k\empty`},
		{End: true},
	}
	var buf bytes.Buffer
	for _, h := range headers {
		if err := WriteHeader(&buf, h); err != nil {
			t.Fatalf("WriteHeader(%+v): %v", h, err)
		}
	}
	r := NewStreamReader(&buf)
	for _, want := range headers {
		got, err := ReadHeader(r)
		if err != nil || got != want {
			t.Fatalf("ReadHeader = %+v, %v; want %+v", got, err, want)
		}
	}
	if _, err := ReadHeader(r); err != io.EOF {
		t.Fatalf("ReadHeader at the end = %v, want io.EOF", err)
	}
}

func TestReadHeaderRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"cut off", `{"name":"` + hashA, "unexpected EOF"},
		{"not JSON", "kubelet.exe 10\n", "not valid JSON"},
		{"unknown field", `{"name":"` + hashA + `","size":1,"file":"C:\\k\\a","mode":7}` + "\n", "unknown field"},
		{"two values", `{"end":true} {"end":true}` + "\n", "more than one JSON value"},
		{"bad name", `{"name":"KUBELET","size":1,"file":"C:\\k\\a"}` + "\n", `name "KUBELET" is not 64`},
		{"offset past size", `{"name":"` + hashA + `","size":1,"offset":2,"file":"C:\\k\\a"}` + "\n", "0 ≤ offset ≤ size"},
		{"negative size", `{"name":"` + hashA + `","size":-1,"file":"C:\\k\\a"}` + "\n", "0 ≤ offset ≤ size"},
		{"no file", `{"name":"` + hashA + `","size":1}` + "\n", "host path"},
		{"unknown encoding", `{"name":"` + hashA + `","size":1,"file":"C:\\k\\a","encoding":"gzip"}` + "\n", `encoding "gzip"`},
		{"zstd without content", `{"name":"` + hashA + `","size":1,"file":"C:\\k\\a","encoding":"zstd"}` + "\n", "do not describe a content"},
		{"plain with content", `{"name":"` + hashA + `","size":1,"file":"C:\\k\\a","contentSize":3}` + "\n", "no separate content"},
		{"end with more", `{"end":true,"size":3}` + "\n", "end header carries"},
		{"too long", strings.Repeat(" ", 3*maxHeader) + "\n", "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadHeader(NewStreamReader(strings.NewReader(tc.in)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadHeader(%q) = %v, want an error saying %q", tc.in, err, tc.want)
			}
		})
	}
}

// FuzzReadHeader feeds arbitrary bytes to the reader of the blob stream's
// headers (the agent reads them from its standard input). It must never
// panic, and a header it accepts is valid and written back the same way.
func FuzzReadHeader(f *testing.F) {
	var buf bytes.Buffer
	WriteHeader(&buf, Header{Name: hashA, Size: 10, Offset: 4, Encoding: Zstd, ContentSHA256: hashB, ContentSize: 30, File: `C:\k\kubelet.exe`})
	WriteHeader(&buf, Header{End: true})
	f.Add(buf.Bytes())
	f.Add([]byte(`{"name":"` + hashA + `","size":1}` + "\n"))
	f.Add([]byte("\n\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewStreamReader(bytes.NewReader(data))
		for {
			h, err := ReadHeader(r)
			if err != nil {
				if errors.Is(err, io.EOF) && h != (Header{}) {
					t.Fatalf("ReadHeader returned %+v with io.EOF", h)
				}
				return
			}
			if verr := h.Validate(); verr != nil {
				t.Fatalf("ReadHeader accepted %+v, which Validate refuses: %v", h, verr)
			}
			var out bytes.Buffer
			if err := WriteHeader(&out, h); err != nil {
				t.Fatalf("WriteHeader(%+v) of an accepted header: %v", h, err)
			}
			again, err := ReadHeader(bufio.NewReader(&out))
			if err != nil || again != h {
				t.Fatalf("header %+v read back as %+v, %v", h, again, err)
			}
		}
	})
}
