package host

// Pipelined transfer: SyncPipelined's blobs travel on the standard input
// of the agent's `receive` command, as one blob stream (internal/blob,
// stream.go), so that the host decodes and hashes them while they arrive
// instead of after the transfer (internal/agent, receive.go).
//
// Resuming works as over SFTP (resume.go): the agent writes each blob's
// bytes to `<sha256>.part` in the staging folder as they arrive, and a
// frame's header says from which byte of the blob it continues. The agent
// writes in order, so a .part cut off holds exactly what arrived; the
// margin resume.go keeps for SFTP's out-of-order writes only sends about
// 2 MiB again.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	pblob "github.com/winnode/winnode/internal/blob"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// errReceiverGone stops the stream's writer once the agent has exited.
var errReceiverGone = errors.New("the agent's receive ended")

// localError is a failure of the local side of a stream (a local file that
// changed), which says more than the agent's view of the cut-off stream.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// stream sends todo to the agent's receive, counting into res.
func (c *Client) stream(ctx context.Context, agent string, staging winpath.Path, todo []blob, p *Progress, res *SyncResult, progress func(Progress)) error {
	pr, pw := io.Pipe()
	var sent SyncResult
	done := make(chan error, 1)
	go func() {
		err := writeStream(ctx, pw, todo, p, progress, &sent)
		pw.CloseWithError(err) // nil: the agent reads the end of its input
		done <- err
	}()
	var ans plan.ReceiveResult
	runErr := c.RunAgent(ctx, agent, []string{"receive", "--staging", staging.String()}, pr, &ans)
	pr.CloseWithError(errReceiverGone)
	sendErr := <-done
	res.BytesUploaded += sent.BytesUploaded
	res.BytesResumed += sent.BytesResumed
	var local *localError
	switch {
	case errors.As(sendErr, &local):
		return local.err
	case runErr != nil:
		return runErr
	case sendErr != nil:
		return sendErr
	}
	if err := checkReceived(todo, ans); err != nil {
		return &NonsenseError{Address: c.address, Command: agent + " receive", Problem: err.Error()}
	}
	res.FilesUploaded += sent.FilesUploaded
	return nil
}

// writeStream writes each blob as one frame, then the end header. Every
// local content is hashed whole as it is read (its kept prefix too), so a
// local file that changed since its hash was taken is refused.
func writeStream(ctx context.Context, w io.Writer, todo []blob, p *Progress, progress func(Progress), sent *SyncResult) error {
	for _, b := range todo {
		if err := writeFrame(ctx, w, b, p, progress, sent); err != nil {
			return err
		}
		sent.FilesUploaded += len(b.HostPaths)
		p.FilesDone++
	}
	return pblob.WriteHeader(w, pblob.Header{End: true})
}

// writeFrame writes one blob's header and its bytes from its resume
// offset on.
func writeFrame(ctx context.Context, w io.Writer, b blob, p *Progress, progress func(Progress), sent *SyncResult) error {
	what := b.HostPaths[0]
	if b.Source.LocalPath != "" {
		what = b.Source.LocalPath
	}
	localErr := func(format string, args ...any) error {
		return &localError{fmt.Errorf("send %s (for %s): %w", what, b.HostPaths[0], fmt.Errorf(format, args...))}
	}
	src, closeSrc, err := openSource(b)
	if err != nil {
		return localErr("%w", err)
	}
	defer closeSrc()
	h := sha256.New()
	if _, err := io.CopyN(h, src, b.resume); err != nil {
		return localErr("read the first %d bytes of the local content: %w", b.resume, err)
	}
	hdr := pblob.Header{Name: b.SHA256, Size: b.Size, Offset: b.resume, File: b.HostPaths[0]}
	if b.content != nil {
		// Zstd is the one encoding payloads are built with (internal/blob).
		hdr.Encoding, hdr.ContentSHA256, hdr.ContentSize = pblob.Zstd, b.content.SHA256, b.content.Size
	}
	if err := pblob.WriteHeader(w, hdr); err != nil {
		return err
	}
	sent.BytesResumed += b.resume
	p.File, p.FileDone, p.FileTotal = b.HostPaths[0], b.resume, b.Size
	if progress != nil {
		progress(*p)
	}
	r := &countingReader{ctx: ctx, rate: rateOf(ctx), r: io.LimitReader(src, b.Size-b.resume), hash: h, p: p, report: progress, reported: b.resume}
	n, err := io.Copy(w, r)
	sent.BytesUploaded += n
	switch {
	case err != nil && ctx.Err() != nil:
		return &localError{err}
	case err != nil:
		return err
	case b.resume+n != b.Size:
		return localErr("the local content ended after %d of %d bytes", b.resume+n, b.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != b.SHA256 {
		return localErr("the local content's sha256 is %s, not %s: it changed since its hash was taken", sum, b.SHA256)
	}
	if progress != nil && r.reported != b.Size {
		r.reported = b.Size
		progress(*p)
	}
	return nil
}

// checkReceived says what is wrong with an agent's answer that does not
// list, in order, the blobs sent.
func checkReceived(todo []blob, ans plan.ReceiveResult) error {
	if len(ans.Blobs) != len(todo) {
		return fmt.Errorf("it reports %d blobs staged, but %d were sent", len(ans.Blobs), len(todo))
	}
	for i, b := range todo {
		if ans.Blobs[i].Name != b.SHA256 {
			return fmt.Errorf("blob %d staged is %q, but %s was sent", i, ans.Blobs[i].Name, b.SHA256)
		}
	}
	return nil
}
