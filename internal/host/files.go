package host

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/winnode/winnode/internal/winpath"
)

// Stat describes a file or folder on the host (SFTP); a missing one is an
// error that matches fs.ErrNotExist.
func (c *Client) Stat(ctx context.Context, hostPath string) (fs.FileInfo, error) {
	p, err := winpath.Parse(hostPath)
	if err != nil {
		return nil, fmt.Errorf("host %s: stat: %w", c.address, err)
	}
	client, err := c.sftpClient()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.dropSFTP(client) })
	defer stop()
	fi, err := client.Stat(p.SFTP())
	if err != nil {
		return nil, c.sftpError("stat", p, err)
	}
	return fi, nil
}

// sftpError names the host, the operation and the path, and makes a lost
// connection an *UnreachableError.
func (c *Client) sftpError(op string, p winpath.Path, err error) error {
	if c.connectionLost(err) {
		return &UnreachableError{Address: c.address, Err: fmt.Errorf("%s %s: %w", op, p, err)}
	}
	return fmt.Errorf("host %s: %s %s: %w", c.address, op, p, err)
}

// HomeDir is the SSH user's home folder on the host, where its SFTP
// sessions start: on Windows OpenSSH, the user's profile folder
// (C:\Users\<user>), which only that user, SYSTEM and Administrators may
// write.
func (c *Client) HomeDir(ctx context.Context) (winpath.Path, error) {
	client, err := c.sftpClient()
	if err != nil {
		return winpath.Path{}, err
	}
	stop := context.AfterFunc(ctx, func() { c.dropSFTP(client) })
	defer stop()
	wd, err := client.Getwd()
	if err != nil {
		return winpath.Path{}, c.sftpError("realpath", winpath.Path{}, err)
	}
	p, err := winpath.Parse(wd)
	if err != nil || len(p.Parts) == 0 {
		return winpath.Path{}, fmt.Errorf("host %s: its SFTP server names the SSH user's home folder %q, not a folder path (want /C:/Users/<user>)", c.address, wd)
	}
	return p, nil
}
