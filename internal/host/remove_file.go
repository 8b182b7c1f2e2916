package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/winnode/winnode/internal/winpath"
)

// RemoveFile deletes one file on the host over SFTP; a file that does not
// exist is not an error. The operator uses it for the agent itself, which
// `winnode-agent remove` keeps because a running program cannot delete
// itself on Windows.
func (c *Client) RemoveFile(ctx context.Context, hostPath string) error {
	p, err := winpath.Parse(hostPath)
	if err != nil {
		return fmt.Errorf("host %s: remove: %w", c.address, err)
	}
	client, err := c.sftpClient()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.dropSFTP(client) })
	defer stop()
	if err := client.Remove(p.SFTP()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c.sftpError("remove", p, err)
	}
	return nil
}

// RemoveEmptyDir deletes a folder on the host if it is empty; a missing or
// non-empty folder is left as it is, without error.
func (c *Client) RemoveEmptyDir(ctx context.Context, hostPath string) error {
	p, err := winpath.Parse(hostPath)
	if err != nil {
		return fmt.Errorf("host %s: remove folder: %w", c.address, err)
	}
	client, err := c.sftpClient()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.dropSFTP(client) })
	defer stop()
	entries, err := client.ReadDir(p.SFTP())
	if err != nil || len(entries) > 0 {
		return nil
	}
	if err := client.RemoveDirectory(p.SFTP()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c.sftpError("remove folder", p, err)
	}
	return nil
}
