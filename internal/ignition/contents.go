package ignition

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/vincent-petithory/dataurl"
)

// maxContents bounds one decoded file, so a gzip bomb cannot fill memory.
const maxContents = 64 << 20

// decodeContents decodes a data: URL (base64 or percent-encoded, as
// Ignition does, with the same dataurl package), gunzips it when
// compression is "gzip", and checks the verification hash ("sha512-<hex>"
// or "sha256-<hex>", of the decompressed contents) when there is one.
func decodeContents(source, compression, verification string) ([]byte, error) {
	u, err := dataurl.DecodeString(source)
	if err != nil {
		return nil, fmt.Errorf("bad data: URL: %w", err)
	}
	data := u.Data
	switch compression {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("compression gzip: %w", err)
		}
		data, err = io.ReadAll(io.LimitReader(zr, maxContents+1))
		if err != nil {
			return nil, fmt.Errorf("compression gzip: %w", err)
		}
		if len(data) > maxContents {
			return nil, fmt.Errorf("compression gzip: contents exceed %d MiB", maxContents>>20)
		}
	default:
		return nil, fmt.Errorf("compression %q is not supported (only gzip)", compression)
	}
	if verification != "" {
		kind, want, ok := strings.Cut(verification, "-")
		var h hash.Hash
		switch {
		case ok && kind == "sha512":
			h = sha512.New()
		case ok && kind == "sha256":
			h = sha256.New()
		default:
			return nil, fmt.Errorf("verification.hash %q: want sha512-<hex> or sha256-<hex>", verification)
		}
		h.Write(data)
		if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(want) {
			return nil, fmt.Errorf("verification.hash: contents have %s-%s, the config says %s", kind, got, verification)
		}
	}
	return data, nil
}
