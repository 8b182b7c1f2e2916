package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// Receive is `winnode-agent receive --staging DIR`: it reads the
// operator's blob stream (internal/blob, stream.go) from r and stages each
// blob's content in the staging folder as `<sha256 of the content>`, where
// apply finds it. An encoded blob is decoded and hashed while its bytes
// arrive, not after the transfer.
//
// Each blob's bytes are also written to `<Name>.part`, so that a transfer
// cut off midway is continued by the next one from where the .part ends
// (the header's Offset). Nothing reaches the content's name unless its
// bytes hash to the header's Name and, for an encoded blob, decode to
// exactly ContentSize bytes with sha256 ContentSHA256: a blob that does
// not is deleted with its .part and the run fails with code Transfer
// naming its file, so the next transfer sends it whole. A stream that
// ends early fails with code Transfer too, keeping the .part. Apply hashes
// every staged content again before it uses it (planFiles).
func (a *Agent) Receive(ctx context.Context, stagingDir string, r io.Reader) (*plan.ReceiveResult, error) {
	staging, err := winpath.Parse(stagingDir)
	if err != nil {
		return nil, plan.Errorf(plan.ErrUsage, "--staging %q: %v", stagingDir, err)
	}
	local, err := a.Platform.LocalPath(staging)
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrHost, File: staging.String(), Message: err.Error()}
	}
	// One transfer at a time writes a host's .part files; apply, remove
	// and bootstrap take the same lock.
	unlock, err := a.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := os.MkdirAll(local, 0o755); err != nil {
		return nil, &plan.Error{Code: plan.ErrHost, File: staging.String(), Message: fmt.Sprintf("creating the staging folder: %v", err)}
	}
	res := &plan.ReceiveResult{SchemaVersion: plan.SchemaVersion, Command: "receive"}
	br := blob.NewStreamReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return res, plan.Errorf(plan.ErrTransfer, "stopped: %v", err)
		}
		h, err := blob.ReadHeader(br)
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return res, plan.Errorf(plan.ErrTransfer, "the blob stream ended before its end header: cut off; the next transfer continues from the .part files kept")
		case err != nil:
			return res, plan.Errorf(plan.ErrTransfer, "%v", err)
		case h.End:
			return res, nil
		}
		got, err := a.receiveBlob(local, staging, h, br)
		if err != nil {
			return res, err
		}
		res.Blobs = append(res.Blobs, got)
	}
}

// frame is one blob being received: its header, its .part and where its
// content goes.
type frame struct {
	h       blob.Header
	part    *os.File
	partWin winpath.Path
	final   string // local path of the staged content
	sum     hash.Hash
	// decoded, for an encoded blob, is the temporary file its content is
	// decoded into, renamed to final when it is right.
	decoded *decoding
}

// receiveBlob receives one frame's bytes from r and stages the blob's
// content (see Receive).
func (a *Agent) receiveBlob(local string, staging winpath.Path, h blob.Header, r io.Reader) (plan.ReceivedBlob, error) {
	got := plan.ReceivedBlob{File: h.File, Name: h.Name, Bytes: h.Size - h.Offset, ResumedFrom: h.Offset}
	fr := &frame{h: h, partWin: staging.Join(h.Name + ".part"), final: filepath.Join(local, h.Staged()), sum: sha256.New()}
	transferErr := func(format string, args ...any) error {
		return &plan.Error{Code: plan.ErrTransfer, File: h.File, Message: fmt.Sprintf(format, args...)}
	}
	if err := fr.openPart(filepath.Join(local, h.Name+".part")); err != nil {
		return got, transferErr("%v", err)
	}
	a.Log.Info("receiving a blob", "file", h.File, "blob", h.Name, "bytes", h.Size, "from", h.Offset, "encoding", h.Encoding)
	if h.Encoding != "" {
		d, err := startDecoding(fr.final, h)
		if err != nil {
			fr.part.Close()
			return got, transferErr("starting to decode: %v", err)
		}
		fr.decoded = d
	}
	bad, err := fr.copy(r)
	if cerr := fr.part.Close(); err == nil && bad == nil && cerr != nil {
		err = cerr
	}
	derr := fr.decoded.finish(bad != nil || err != nil)
	switch {
	case bad != nil:
		return got, transferErr("%s", a.dropBlob(fr, bad))
	case err != nil:
		// Cut off (or the disk failed): the .part keeps what arrived.
		return got, transferErr("receiving %s at %s: %v; the next transfer continues from the %s kept", h.Name, fr.partWin, err, fr.partWin)
	case derr != nil:
		return got, transferErr("%s", a.dropBlob(fr, derr))
	}
	if err := fr.stage(a); err != nil {
		return got, &plan.Error{Code: plan.ErrFileInstall, File: h.File, Message: fmt.Sprintf("staging the received blob: %v", err)}
	}
	return got, nil
}

// openPart opens the .part to continue at the header's Offset (a transfer
// that resumes keeps the .part's first Offset bytes) or creates it empty.
// The kept bytes are hashed, and decoded with the rest, again.
func (fr *frame) openPart(path string) error {
	if fr.h.Offset == 0 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		fr.part = f
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("resuming at byte %d: %w", fr.h.Offset, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < fr.h.Offset {
		err = fmt.Errorf("%s holds %d bytes, fewer than the %d to keep", fr.partWin, fi.Size(), fr.h.Offset)
	}
	if err == nil {
		err = f.Truncate(fr.h.Offset)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("resuming at byte %d: %w", fr.h.Offset, err)
	}
	fr.part = f
	return nil
}

// copy feeds the kept bytes and then the frame's bytes from r to the hash
// and the decoder, writing the new ones to the .part. bad says why the
// blob is not what its header says (its bytes do not decode or hash
// right); err, that the bytes could not be read or written.
func (fr *frame) copy(r io.Reader) (bad, err error) {
	sinks := []io.Writer{fr.sum}
	if fr.decoded != nil {
		sinks = append(sinks, fr.decoded.in)
	}
	kept := io.MultiWriter(sinks...)
	if _, err := io.Copy(kept, io.NewSectionReader(fr.part, 0, fr.h.Offset)); err != nil {
		return fr.decoded.failure(), fmt.Errorf("reading the kept %s: %w", fr.partWin, err)
	}
	if _, err := fr.part.Seek(fr.h.Offset, io.SeekStart); err != nil {
		return nil, err
	}
	want := fr.h.Size - fr.h.Offset
	src := &readTracker{r: r}
	// Large writes: fewer writes to the .part and hand-overs to the decoder
	// than io.Copy's 32 KiB.
	n, err := io.CopyBuffer(io.MultiWriter(append([]io.Writer{fr.part}, sinks...)...), io.LimitReader(src, want), make([]byte, copyBuffer))
	if err == nil && n < want {
		err = io.EOF
	}
	switch {
	case err != nil && src.err == nil && fr.decoded.failure() != nil:
		return fr.decoded.failure(), nil
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("the stream ended after %d of its %d bytes", n, want)
	case err != nil:
		return nil, err
	}
	if got := hex.EncodeToString(fr.sum.Sum(nil)); got != fr.h.Name {
		return fmt.Errorf("its %d bytes have sha256 %s, not %s", fr.h.Size, got, fr.h.Name), nil
	}
	return nil, nil
}

// stage renames the verified content to its staged name and deletes the
// .part of an encoded blob (its content is what apply needs).
func (fr *frame) stage(a *Agent) error {
	if fr.decoded == nil {
		return a.retryFile(func() error { return os.Rename(fr.part.Name(), fr.final) })
	}
	if err := a.retryFile(func() error { return os.Rename(fr.decoded.tmp.Name(), fr.final) }); err != nil {
		return err
	}
	if err := a.retryFile(func() error { return os.Remove(fr.part.Name()) }); err != nil && !errors.Is(err, os.ErrNotExist) {
		// Only costs disk space: apply's cleanStaging deletes it.
		a.Log.Warn("could not delete a received blob's .part", "blob", fr.partWin.String(), "err", err)
	}
	return nil
}

// dropBlob deletes the .part of a blob that is not what its header says
// (the decoder's file is gone already), so that the next transfer sends it
// whole, and says so, for the error.
func (a *Agent) dropBlob(fr *frame, why error) string {
	a.Log.Warn("a received blob is not what its header says; deleting it", "file", fr.h.File, "blob", fr.h.Name, "err", why)
	err := a.retryFile(func() error { return os.Remove(fr.part.Name()) })
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("blob %s as received: %v; %s could not be deleted (%v): delete it and send the blob again", fr.h.Name, why, fr.partWin, err)
	}
	return fmt.Sprintf("blob %s as received: %v; deleted, send it again", fr.h.Name, why)
}

// copyBuffer is the size of receive's reads from the stream.
const copyBuffer = 1 << 20

// readTracker remembers the error of the reader it wraps, to tell a stream
// that ended from a decoder that gave up.
type readTracker struct {
	r   io.Reader
	err error
}

func (t *readTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil {
		t.err = err
	}
	return n, err
}
