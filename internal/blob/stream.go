package blob

// The blob stream: how the operator sends staged blobs to the agent's
// `receive` command on its standard input, over the SSH session that runs
// it, so that the host decodes and hashes each blob while its bytes arrive
// (docs/performance.md, "Pipelined transfer").
//
// The stream is a sequence of frames. Each frame is one header, a line of
// JSON (Header) ending in '\n', followed by exactly Size-Offset bytes of
// the blob, from byte Offset on: the bytes before Offset are the ones an
// earlier, interrupted transfer left in the host's `<Name>.part`. The last
// frame is a header with End set and no bytes. A stream that ends anywhere
// else was cut off.
//
// The format is winnode's own: it is a length-prefixed framing of a few
// lines, which no library of the ecosystem offers in a form smaller than
// the code below (tar would carry no offset and no content hash).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxHeader bounds a header line: a header names two hashes and one host
// path, far below this.
const maxHeader = 4096

// maxHostPath bounds the host path a header names (Windows' long paths
// stop at 32,767 characters; winnode's are short).
const maxHostPath = 1024

// Header describes one frame of the blob stream.
type Header struct {
	// Name is the sha256 (64 lower-case hex digits) of the blob's bytes:
	// its name in the staging folder.
	Name string `json:"name,omitempty"`
	// Size is the blob's size; Offset is where this frame's bytes start
	// (0 ≤ Offset ≤ Size).
	Size   int64 `json:"size,omitempty"`
	Offset int64 `json:"offset,omitempty"`
	// Encoding is "" for a blob that is the content itself, or Zstd for
	// an encoded blob that decodes to ContentSize bytes with sha256
	// ContentSHA256; the agent stages that content, named by its hash.
	Encoding      string `json:"encoding,omitempty"`
	ContentSHA256 string `json:"contentSHA256,omitempty"`
	ContentSize   int64  `json:"contentSize,omitempty"`
	// File is the host path (Windows form) the blob is for, named in
	// errors; the plan, not the stream, says where files go.
	File string `json:"file,omitempty"`
	// End marks the stream's last frame.
	End bool `json:"end,omitempty"`
}

// WriteHeader writes h as one frame header.
func WriteHeader(w io.Writer, h Header) error {
	if err := h.Validate(); err != nil {
		return err
	}
	line, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}

// ReadHeader reads and checks the next frame header. It returns io.EOF
// when r ends before a header begins, io.ErrUnexpectedEOF when it ends
// inside one, and an error saying what is wrong with a header that is not
// one. It must never panic, whatever r holds (fuzzed).
func ReadHeader(r *bufio.Reader) (Header, error) {
	var h Header
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeader:
		return h, fmt.Errorf("a blob stream header is longer than %d bytes", maxHeader)
	case err == io.EOF && len(line) == 0:
		return h, io.EOF
	case err == io.EOF:
		return h, io.ErrUnexpectedEOF
	case err != nil:
		return h, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return Header{}, fmt.Errorf("a blob stream header is not valid JSON: %w", err)
	}
	if dec.More() {
		return Header{}, errors.New("a blob stream header holds more than one JSON value")
	}
	if err := h.Validate(); err != nil {
		return Header{}, err
	}
	return h, nil
}

// NewStreamReader returns a reader of a blob stream whose buffer holds a
// whole header.
func NewStreamReader(r io.Reader) *bufio.Reader {
	return bufio.NewReaderSize(r, 2*maxHeader)
}

// Validate says what is wrong with a header, naming its file.
func (h Header) Validate() error {
	if h.End {
		if h != (Header{End: true}) {
			return errors.New("a blob stream's end header carries other fields")
		}
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("blob stream header for %q: %s", h.File, fmt.Sprintf(format, args...))
	}
	switch {
	case h.File == "" || len(h.File) > maxHostPath || strings.ContainsAny(h.File, "\x00\n"):
		return bad("the file must be a host path of 1 to %d characters", maxHostPath)
	case !IsSHA256(h.Name):
		return bad("name %q is not 64 lower-case hex digits", h.Name)
	case h.Size < 0 || h.Offset < 0 || h.Offset > h.Size:
		return bad("offset %d and size %d are not 0 ≤ offset ≤ size", h.Offset, h.Size)
	}
	switch h.Encoding {
	case "":
		if h.ContentSHA256 != "" || h.ContentSize != 0 {
			return bad("a blob with no encoding has no separate content hash or size")
		}
	case Zstd:
		if !IsSHA256(h.ContentSHA256) || h.ContentSize < 0 {
			return bad("content sha256 %q and size %d do not describe a content", h.ContentSHA256, h.ContentSize)
		}
	default:
		return bad("encoding %q is not supported (want %q or none)", h.Encoding, Zstd)
	}
	return nil
}

// Staged is the name the blob's content is staged under: Name for a blob
// that is the content, ContentSHA256 for an encoded one.
func (h Header) Staged() string {
	if h.Encoding != "" {
		return h.ContentSHA256
	}
	return h.Name
}

// IsSHA256 says whether s is 64 lower-case hex digits.
func IsSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
