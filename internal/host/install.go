package host

import (
	"context"
	"fmt"

	"github.com/winnode/winnode/internal/winpath"
)

// Install uploads one file straight to its host path (not to the staging
// folder), replacing what is there: for the agent itself, which must be in
// place before it can move staged blobs. The file is written to
// `<HostPath>.part`, its size and hash checked, then renamed; its folder is
// created if needed. The caller decides whether an upload is needed (the
// agent's info says which version runs). It returns the bytes sent.
func (c *Client) Install(ctx context.Context, f LocalFile, progress func(Progress)) (int64, error) {
	dst, err := winpath.Parse(f.HostPath)
	if err != nil {
		return 0, fmt.Errorf("host %s: install: %w", c.address, err)
	}
	if len(dst.Parts) == 0 {
		return 0, fmt.Errorf("host %s: install: %s is a drive root, not a file path", c.address, dst)
	}
	if err := checkFile(f); err != nil {
		return 0, fmt.Errorf("host %s: install %s: %w", c.address, dst, err)
	}
	client, err := c.sftpClient()
	if err != nil {
		return 0, err
	}
	ctx, endWatch := c.watchTransfer(ctx)
	defer endWatch()
	stop := context.AfterFunc(ctx, func() { c.dropSFTP(client) })
	defer stop()
	if err := c.mkdirAll(client, dst.Dir()); err != nil {
		return 0, c.transferError(ctx, client, "install", err)
	}
	p := Progress{FilesTotal: 1, BytesTotal: f.Size}
	// resume stays 0: `<HostPath>.part` is not named by its content, so a
	// leftover one may be of another version and is never continued.
	b := blob{SHA256: f.SHA256, Size: f.Size, Source: f, HostPaths: []string{dst.String()}}
	n, _, err := c.upload(ctx, client, dst, b, &p, progress)
	if err != nil {
		return n, c.transferError(ctx, client, "install", err)
	}
	return n, nil
}
