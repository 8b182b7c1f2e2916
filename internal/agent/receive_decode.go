package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/blob"
)

// decoding decodes an encoded blob while Receive writes its bytes to in,
// into a temporary file beside the content's staged name.
type decoding struct {
	in   *io.PipeWriter
	tmp  *os.File
	done chan struct{}
	err  error // set before done is closed
}

// errAbandoned ends a decoding whose blob is not received whole.
var errAbandoned = errors.New("the blob was not received whole")

// startDecoding starts decoding the blob h describes into a temporary file
// beside final. The decoder checks the content's size and sha256 as it
// goes (blob.Decode) and stops at the first byte that is wrong.
func startDecoding(final string, h blob.Header) (*decoding, error) {
	// A run that was killed (its connection dropped) leaves its temporary
	// file: no other run can be using one, as Receive holds the lock.
	pattern := "." + filepath.Base(final) + ".*.decoding"
	if stale, err := filepath.Glob(filepath.Join(filepath.Dir(final), pattern)); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(final), pattern)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	d := &decoding{in: pw, tmp: tmp, done: make(chan struct{})}
	go func() {
		err := blob.Decode(tmp, pr, h.Encoding, h.ContentSize, h.ContentSHA256)
		if err != nil {
			err = fmt.Errorf("its bytes are not the file's content: %w", err)
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		d.err = err
		close(d.done)
		// Writes after a failure fail with it; after a success there are
		// none (the decoder read to the end of its input).
		pr.CloseWithError(err)
	}()
	return d, nil
}

// failure is why the decoding stopped early, or nil while it goes on (or
// for no decoding).
func (d *decoding) failure() error {
	if d == nil {
		return nil
	}
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// finish ends the input and waits for the decoder: it returns the
// decoder's verdict on the content. With abandon, the blob was not
// received whole, and the decoding is stopped. The temporary file is
// deleted unless the content is right; it is closed either way (Windows
// deletes no open file).
func (d *decoding) finish(abandon bool) error {
	if d == nil {
		return nil
	}
	if abandon {
		d.in.CloseWithError(errAbandoned)
	} else {
		d.in.Close()
	}
	<-d.done
	if abandon || d.err != nil {
		os.Remove(d.tmp.Name())
	}
	if abandon {
		return nil
	}
	return d.err
}
