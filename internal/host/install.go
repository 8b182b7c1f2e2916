package host

import (
	"context"
	"fmt"

	"github.com/winnode/winnode/internal/winpath"
)

// InstallFile puts one file at its HostPath directly, without the agent:
// what the operator does with the agent itself, which must be on the host
// before anything can apply a plan. The content is staged by Sync first (so
// a retried install resumes, and the bytes are counted in the result), then
// the staged blob is renamed into place, replacing what was there.
//
// Windows refuses to replace a running program: install the agent only
// while it does not run.
func (c *Client) InstallFile(ctx context.Context, f LocalFile, stagingDir string) (SyncResult, error) {
	dst, err := winpath.Parse(f.HostPath)
	if err != nil {
		return SyncResult{}, fmt.Errorf("host %s: install: %w", c.address, err)
	}
	res, err := c.Sync(ctx, []LocalFile{f}, nil, stagingDir, nil)
	if err != nil {
		return res, err
	}
	staged, err := StagedPath(stagingDir, f.SHA256)
	if err != nil {
		return res, fmt.Errorf("host %s: install %s: %w", c.address, dst, err)
	}
	src, _ := winpath.Parse(staged)
	client, err := c.sftpClient()
	if err != nil {
		return res, err
	}
	stop := context.AfterFunc(ctx, func() { c.dropSFTP(client) })
	defer stop()
	if err := c.mkdirAll(client, dst.Dir()); err != nil {
		return res, c.sftpError("install", dst, err)
	}
	if err := rename(client, src.SFTP(), dst.SFTP()); err != nil {
		return res, c.sftpError("install", dst, fmt.Errorf("moving staged %s into place: %w", src, err))
	}
	return res, nil
}
