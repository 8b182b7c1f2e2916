package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"

	"github.com/pkg/sftp"

	"github.com/winnode/winnode/internal/winpath"
)

// LocalFile is one file the host must have.
type LocalFile struct {
	// LocalPath is where the content is read from (streamed, never held in
	// memory), or, when empty, Content is the content (small generated
	// files: a kubeconfig, a plan).
	LocalPath string
	Content   []byte
	// HostPath is where the agent installs it, in Windows form
	// (`C:\k\kubelet.exe`).
	HostPath string
	// SHA256 (64 lower-case hex digits) and Size describe the content.
	SHA256 string
	Size   int64
	// Encoded, when set, is the content's encoded copy (a payload file's
	// compressed `<name>.zst`): Sync uploads it instead of the content, as
	// the blob `<stagingDir>\<Encoded.SHA256>`, and the agent decodes it
	// (plan.File.Encoding). Install ignores it.
	Encoded *Encoded
}

// Encoded is a local file holding the encoded form of a LocalFile's
// content, and the sha256 (64 lower-case hex digits) and size of its bytes.
type Encoded struct {
	LocalPath string
	SHA256    string
	Size      int64
}

// Progress reports an upload, for a progress bar.
type Progress struct {
	// File is the host path of the file being uploaded.
	File                string
	FileDone, FileTotal int64
	// BytesDone and BytesTotal count what this sync uploads (files already
	// on the host are not in the total).
	BytesDone, BytesTotal int64
	// FilesDone and FilesTotal count uploads: a content wanted at two host
	// paths is uploaded once.
	FilesDone, FilesTotal int
}

// SyncResult says what a sync moved.
type SyncResult struct {
	// BytesUploaded counts the bytes this sync sent.
	BytesUploaded int64
	// BytesResumed counts the bytes of partly uploaded blobs that an
	// earlier, interrupted sync had sent and that this one did not send
	// again (see resume.go).
	BytesResumed  int64
	FilesUploaded int
	// FilesSkipped counts files that needed no upload: installed with the
	// same hash, or already staged by an earlier sync (FilesAlreadyStaged of
	// them).
	FilesSkipped       int
	FilesAlreadyStaged int
}

// progressStep is how many bytes go by between progress reports.
const progressStep = 1 << 20

// Sync uploads the files the host does not have to its staging folder, each
// as a blob named by the sha256 of its bytes: `<stagingDir>\<sha256>` of
// the content, or `<stagingDir>\<Encoded.SHA256>` of its encoded copy when
// it has one (then only the encoded bytes travel); the agent decodes and
// moves blobs into place when it applies a plan.
//
// installed maps host paths to the sha256 of the file installed there (the
// agent's info; nil on a new host); a file installed with its hash is
// skipped, and so is a blob already staged with the right size (for an
// encoded file, its encoded blob or the blob of its content, which an
// apply that decoded it and then failed leaves), so a sync retried after a
// failure resumes where it stopped. Each blob is written to
// `<sha256>.part`, its size and hash checked, then renamed; a `.part` left
// by an interrupted sync is continued, not sent again from zero (resume.go).
// A staged blob is trusted by name and size only: the agent hashes it
// before use and deletes it when its content is wrong, and the next sync
// uploads it again.
//
// progress, if not nil, is called from one goroutine at a time during
// uploads. Contents are never logged.
func (c *Client) Sync(ctx context.Context, files []LocalFile, installed map[string]string, stagingDir string, progress func(Progress)) (SyncResult, error) {
	return c.sync(ctx, "", files, installed, stagingDir, progress)
}

// SyncPipelined is Sync with the blobs streamed to the agent's `receive`
// command (agent is its host path) on its standard input, in the same SSH
// connection (stream.go), instead of written over SFTP: the host decodes
// and hashes each blob while its bytes arrive. What it skips, and how a
// cut-off transfer resumes, is as Sync's; SFTP only looks at what is
// staged.
func (c *Client) SyncPipelined(ctx context.Context, agent string, files []LocalFile, installed map[string]string, stagingDir string, progress func(Progress)) (SyncResult, error) {
	if err := CheckArgs(agent, "receive", "--staging", stagingDir); err != nil {
		return SyncResult{}, fmt.Errorf("host %s: sync: %w", c.address, err)
	}
	return c.sync(ctx, agent, files, installed, stagingDir, progress)
}

// sync is Sync (agent "") and SyncPipelined.
func (c *Client) sync(ctx context.Context, agent string, files []LocalFile, installed map[string]string, stagingDir string, progress func(Progress)) (SyncResult, error) {
	var res SyncResult
	staging, err := winpath.Parse(stagingDir)
	if err != nil {
		return res, fmt.Errorf("host %s: sync: staging folder: %w", c.address, err)
	}
	blobs, skipped, err := planSync(files, installed)
	if err != nil {
		return res, fmt.Errorf("host %s: sync: %w", c.address, err)
	}
	res.FilesSkipped = skipped
	if len(blobs) == 0 {
		return res, nil
	}

	client, err := c.sftpClient()
	if err != nil {
		return res, err
	}
	ctx, endWatch := c.watchTransfer(ctx)
	defer endWatch()
	// SFTP calls take no context: closing the SFTP session ends them.
	stop := context.AfterFunc(ctx, func() { c.dropSFTP(client) })
	defer stop()
	fail := func(err error) (SyncResult, error) {
		return res, c.transferError(ctx, client, "sync", err)
	}

	if err := c.mkdirAll(client, staging); err != nil {
		return fail(err)
	}

	// Blobs already staged need no upload; partly uploaded ones need only
	// their rest (counted here so that the progress total says what this
	// sync sends).
	var todo []blob
	for _, b := range blobs {
		staged, err := isStaged(client, staging, b.SHA256, b.Size)
		if err == nil && !staged && b.content != nil {
			staged, err = isStaged(client, staging, b.content.SHA256, b.content.Size)
		}
		if err != nil {
			return fail(err)
		}
		if staged {
			res.FilesSkipped += len(b.HostPaths)
			res.FilesAlreadyStaged += len(b.HostPaths)
			continue
		}
		part := partPath(staging.Join(b.SHA256))
		fi, err := client.Stat(part.SFTP())
		switch {
		case err == nil && fi.Mode().IsRegular():
			b.resume = resumeOffset(fi.Size(), b.Size)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fail(fmt.Errorf("look for partly uploaded %s: %w", part, err))
		}
		todo = append(todo, b)
	}

	p := Progress{FilesTotal: len(todo)}
	for _, b := range todo {
		p.BytesTotal += b.Size - b.resume
	}
	if agent != "" {
		if err := c.stream(ctx, agent, staging, todo, &p, &res, progress); err != nil {
			return fail(err)
		}
		return res, nil
	}
	for _, b := range todo {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		n, resumed, err := c.upload(ctx, client, staging.Join(b.SHA256), b, &p, progress)
		res.BytesUploaded += n
		res.BytesResumed += resumed
		if err != nil {
			return fail(err)
		}
		res.FilesUploaded += len(b.HostPaths)
		p.FilesDone++
	}
	return res, nil
}

// isStaged says whether the blob name is staged with size bytes.
func isStaged(client *sftp.Client, staging winpath.Path, name string, size int64) (bool, error) {
	fi, err := client.Stat(staging.Join(name).SFTP())
	switch {
	case err == nil:
		return fi.Mode().IsRegular() && fi.Size() == size, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("look for staged %s: %w", staging.Join(name), err)
}

// StagedPath is where Sync stages content with hash sha256 in stagingDir:
// `<stagingDir>\<sha256>`, in Windows form.
func StagedPath(stagingDir, sha256 string) (string, error) {
	dir, err := winpath.Parse(stagingDir)
	if err != nil {
		return "", fmt.Errorf("staging folder: %w", err)
	}
	if !isSHA256(sha256) {
		return "", fmt.Errorf("sha256 %q is not 64 lower-case hex digits", sha256)
	}
	return dir.Join(sha256).String(), nil
}

// blob is one content, or one encoded copy of a content, to stage, and the
// host paths that want it. SHA256 and Size are the blob's own, which name
// it.
type blob struct {
	SHA256    string
	Size      int64
	Source    LocalFile
	HostPaths []string
	// content, for an encoded blob, is the sha256 and size of the content
	// it decodes to: a blob of that content staged already will do.
	content *Encoded
	// resume is where the upload expects to continue a .part found on the
	// host (0: from the start); upload checks it again when it opens it.
	// Only Sync sets it: a .part named by its content's hash can only ever
	// hold a prefix of that content, unlike Install's `<HostPath>.part`.
	resume int64
}

// partPath is where a blob is written before it is renamed to final.
func partPath(final winpath.Path) winpath.Path {
	return final.Dir().Join(final.Base() + ".part")
}

// planSync decides what to upload: the distinct contents of the files not
// installed with their hash. It checks every file first, so that nothing is
// uploaded when one entry is wrong.
func planSync(files []LocalFile, installed map[string]string) (blobs []blob, skipped int, err error) {
	type inst struct {
		path winpath.Path
		sha  string
	}
	var have []inst
	for p, sum := range installed {
		if parsed, err := winpath.Parse(p); err == nil {
			have = append(have, inst{parsed, sum})
		} // a path the agent reports that cannot be parsed matches nothing
	}
	bySum := map[string]int{}
	var errs []error
	for i, f := range files {
		hp, err := winpath.Parse(f.HostPath)
		if err != nil {
			errs = append(errs, fmt.Errorf("file %d: host path: %w", i, err))
			continue
		}
		if err := checkFile(f); err != nil {
			errs = append(errs, fmt.Errorf("file %s: %w", hp, err))
			continue
		}
		upToDate := false
		for _, h := range have {
			if h.path.Equal(hp) && strings.EqualFold(h.sha, f.SHA256) {
				upToDate = true
				break
			}
		}
		if upToDate {
			skipped++
			continue
		}
		b := blob{SHA256: f.SHA256, Size: f.Size, Source: f, HostPaths: []string{hp.String()}}
		if e := f.Encoded; e != nil {
			b = blob{SHA256: e.SHA256, Size: e.Size, HostPaths: b.HostPaths,
				Source:  LocalFile{LocalPath: e.LocalPath, HostPath: f.HostPath, SHA256: e.SHA256, Size: e.Size},
				content: &Encoded{SHA256: f.SHA256, Size: f.Size}}
		}
		if j, ok := bySum[b.SHA256]; ok {
			if blobs[j].Size != b.Size {
				errs = append(errs, fmt.Errorf("file %s: sha256 %s is also given for %s with size %d, not %d", hp, b.SHA256, blobs[j].HostPaths[0], blobs[j].Size, b.Size))
				continue
			}
			blobs[j].HostPaths = append(blobs[j].HostPaths, hp.String())
			continue
		}
		bySum[b.SHA256] = len(blobs)
		blobs = append(blobs, b)
	}
	if len(errs) > 0 {
		return nil, 0, errors.Join(errs...)
	}
	return blobs, skipped, nil
}

// checkFile checks one entry's description (not the local file's content,
// which is checked while it streams).
func checkFile(f LocalFile) error {
	if !isSHA256(f.SHA256) {
		return fmt.Errorf("sha256 %q is not 64 lower-case hex digits", f.SHA256)
	}
	if f.Size < 0 {
		return fmt.Errorf("size %d is negative", f.Size)
	}
	switch {
	case f.LocalPath != "" && f.Content != nil:
		return errors.New("both a local path and content are given; give one")
	case f.LocalPath == "" && int64(len(f.Content)) != f.Size:
		return fmt.Errorf("content is %d bytes, not %d", len(f.Content), f.Size)
	case f.LocalPath == "":
		if sum := sha256.Sum256(f.Content); hex.EncodeToString(sum[:]) != f.SHA256 {
			return fmt.Errorf("content's sha256 is %x, not %s", sum, f.SHA256)
		}
	}
	if e := f.Encoded; e != nil {
		switch {
		case e.LocalPath == "":
			return errors.New("the encoded copy has no local path")
		case !isSHA256(e.SHA256):
			return fmt.Errorf("the encoded copy's sha256 %q is not 64 lower-case hex digits", e.SHA256)
		case e.Size < 0:
			return fmt.Errorf("the encoded copy's size %d is negative", e.Size)
		}
	}
	return nil
}

func isSHA256(s string) bool {
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

// upload writes one blob to final (through final.part, checked, then
// renamed), continuing a .part that an interrupted sync left (resume.go).
// It returns the bytes sent and the bytes of the .part kept.
func (c *Client) upload(ctx context.Context, client *sftp.Client, final winpath.Path, b blob, p *Progress, progress func(Progress)) (sent, kept int64, err error) {
	part := partPath(final)
	what := b.HostPaths[0]
	if b.Source.LocalPath != "" {
		what = b.Source.LocalPath
	}
	failf := func(format string, args ...any) error {
		return fmt.Errorf("upload %s (for %s) to %s: %w", what, strings.Join(b.HostPaths, ", "), final, fmt.Errorf(format, args...))
	}

	src, closeSrc, err := openSource(b)
	if err != nil {
		return 0, 0, failf("%w", err)
	}
	defer closeSrc()

	dst, offset, err := openPart(client, part, b)
	if err != nil {
		return 0, 0, failf("%w", err)
	}
	// The .part may have changed since Sync looked (a concurrent sync):
	// keep the progress total to what this upload sends.
	p.BytesTotal += b.resume - offset
	// The kept prefix is hashed from the local content, so that the whole
	// local content is still checked against its hash.
	h := sha256.New()
	if _, err := io.CopyN(h, src, offset); err != nil {
		dst.Close()
		return 0, offset, failf("read the first %d bytes of the local content: %w", offset, err)
	}
	p.File, p.FileDone, p.FileTotal = b.HostPaths[0], offset, b.Size
	if progress != nil {
		progress(*p)
	}
	r := &countingReader{ctx: ctx, rate: rateOf(ctx), r: io.LimitReader(src, b.Size-offset), hash: h, p: p, report: progress, reported: offset}
	// ReadFromWithConcurrency keeps many writes in flight (the client is
	// opened with UseConcurrentWrites): what makes high-latency links fast.
	// It writes from dst's offset, where openPart put it.
	n, err := dst.ReadFromWithConcurrency(r, 0)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, offset, failf("%w", err)
	}
	if offset+n != b.Size {
		return n, offset, failf("the local content ended after %d of %d bytes", offset+n, b.Size)
	}
	if sum := hex.EncodeToString(r.hash.Sum(nil)); sum != b.SHA256 {
		_ = client.Remove(part.SFTP())
		return n, offset, failf("the local content's sha256 is %s, not %s: it changed since its hash was taken", sum, b.SHA256)
	}
	fi, err := client.Stat(part.SFTP())
	if err != nil {
		return n, offset, failf("check %s: %w", part, err)
	}
	if fi.Size() != b.Size {
		return n, offset, failf("%s is %d bytes on the host after the upload, not %d", part, fi.Size(), b.Size)
	}
	if err := rename(client, part.SFTP(), final.SFTP()); err != nil {
		return n, offset, failf("rename %s: %w", part, err)
	}
	if progress != nil && r.reported != b.Size {
		r.reported = b.Size
		progress(*p)
	}
	return n, offset, nil
}

// openSource opens the local content of a blob and checks its size.
func openSource(b blob) (src io.Reader, closeSrc func(), err error) {
	if b.Source.LocalPath == "" {
		return bytes.NewReader(b.Source.Content), func() {}, nil
	}
	f, err := os.Open(b.Source.LocalPath)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	} else if fi.Size() != b.Size {
		f.Close()
		return nil, nil, fmt.Errorf("the local file is %d bytes, but %d are expected: it changed since its hash was taken", fi.Size(), b.Size)
	}
	return f, func() { f.Close() }, nil
}

// openPart opens a blob's .part for writing and says where the upload
// starts: where the .part, as long as it is now, is continued
// (resumeOffset), or 0 with the .part created anew (emptied) when it is
// missing, too short to keep, or longer than the blob.
func openPart(client *sftp.Client, part winpath.Path, b blob) (*sftp.File, int64, error) {
	if b.resume > 0 {
		// No O_APPEND: SFTP servers differ on whether it ignores the
		// offsets the client sends; a plain write at an offset is the same
		// everywhere. No O_TRUNC: the prefix is what is kept.
		if f, err := client.OpenFile(part.SFTP(), os.O_WRONLY); err == nil {
			if fi, err := f.Stat(); err == nil {
				if offset := resumeOffset(fi.Size(), b.Size); offset > 0 {
					if _, err := f.Seek(offset, io.SeekStart); err == nil {
						return f, offset, nil
					}
				}
			}
			f.Close()
		}
	}
	f, err := client.Create(part.SFTP())
	if err != nil {
		return nil, 0, fmt.Errorf("create %s: %w", part, err)
	}
	return f, 0, nil
}

// rename replaces newpath with oldpath: atomically where the server has the
// posix-rename extension (Windows OpenSSH and winsim do), else by removing
// newpath first (plain SFTP rename refuses to overwrite).
func rename(client *sftp.Client, oldpath, newpath string) error {
	if _, ok := client.HasExtension("posix-rename@openssh.com"); ok {
		return client.PosixRename(oldpath, newpath)
	}
	if err := client.Remove(newpath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return client.Rename(oldpath, newpath)
}

// countingReader hashes what it reads, stops when ctx ends, and reports
// progress every progressStep bytes.
type countingReader struct {
	ctx      context.Context
	rate     *rateWatch
	r        io.Reader
	hash     hash.Hash
	p        *Progress
	report   func(Progress)
	reported int64 // FileDone at the last report
}

func (r *countingReader) Read(b []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(b)
	r.rate.count(n)
	r.hash.Write(b[:n])
	r.p.FileDone += int64(n)
	r.p.BytesDone += int64(n)
	if r.report != nil && (r.p.FileDone-r.reported >= progressStep || (err == io.EOF && r.p.FileDone != r.reported)) {
		r.reported = r.p.FileDone
		r.report(*r.p)
	}
	return n, err
}

// mkdirAll creates dir and its parents, one SFTP path at a time (the SFTP
// form of a drive root, `/C:`, cannot be created, only found).
func (c *Client) mkdirAll(client *sftp.Client, dir winpath.Path) error {
	if fi, err := client.Stat(dir.SFTP()); err == nil && fi.IsDir() {
		return nil
	}
	for i := 1; i <= len(dir.Parts); i++ {
		p := winpath.Path{Drive: dir.Drive, Parts: dir.Parts[:i]}
		fi, err := client.Stat(p.SFTP())
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return fmt.Errorf("create folder %s: %s is a file", dir, p)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("create folder %s: look at %s: %w", dir, p, err)
		}
		if err := client.Mkdir(p.SFTP()); err != nil {
			// Someone else (a concurrent sync) may have just created it.
			if fi, serr := client.Stat(p.SFTP()); serr == nil && fi.IsDir() {
				continue
			}
			return fmt.Errorf("create folder %s: %w", p, err)
		}
	}
	return nil
}

// transferError names the host and the operation, says when ctx stopped
// it, and makes a lost connection an *UnreachableError. The SFTP session
// may be broken: it is dropped, and the next call opens a new one.
func (c *Client) transferError(ctx context.Context, client *sftp.Client, op string, err error) error {
	c.dropSFTP(client)
	var slow *SlowTransferError
	var unreachable *UnreachableError
	switch {
	case errors.As(context.Cause(ctx), &slow):
		return slow
	case ctx.Err() != nil:
		return fmt.Errorf("host %s: %s: %w (stopped: %w)", c.address, op, err, context.Cause(ctx))
	case errors.As(err, &unreachable):
		return err // the agent's run says so already (SyncPipelined)
	case c.connectionLost(err):
		return &UnreachableError{Address: c.address, Err: fmt.Errorf("%s: %w", op, err)}
	}
	return fmt.Errorf("host %s: %s: %w", c.address, op, err)
}

// connectionLost reports whether err means the SSH connection is gone.
func (c *Client) connectionLost(err error) bool {
	if errors.Is(err, sftp.ErrSSHFxConnectionLost) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// sftpClient returns the connection's SFTP session, opening it on first use.
func (c *Client) sftpClient() (*sftp.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sftp != nil {
		return c.sftp, nil
	}
	client, err := sftp.NewClient(c.ssh,
		sftp.UseConcurrentWrites(true),
		sftp.MaxConcurrentRequestsPerFile(sftpMaxConcurrentRequests),
	)
	if err != nil {
		return nil, &UnreachableError{Address: c.address, Err: fmt.Errorf("open the SFTP subsystem: %w", err)}
	}
	c.sftp = client
	return client, nil
}

// dropSFTP closes an SFTP session that may be broken, if it is still the
// current one.
func (c *Client) dropSFTP(client *sftp.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sftp == client {
		c.sftp = nil
	}
	_ = client.Close()
}
