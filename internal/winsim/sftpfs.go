package winsim

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/sftp"

	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/filestore"
)

// hostFS serves SFTP requests over the host's filesystem, the way Windows
// OpenSSH's sftp-server does: paths are /C:/dir/file (C:\dir\file works
// too), names are case-insensitive, rename replaces an existing file.
type hostFS struct {
	host *Host
}

// sftpPath turns a request path into a Windows path. pkg/sftp joins paths
// that do not start with "/" onto the start folder, so `C:\k\x` arrives as
// `/C:/Users/Administrator/C:\k\x`: the last drive component wins, as a
// path typed with a drive letter is absolute on Windows.
func sftpPath(p string) (winpath.Path, error) {
	s := strings.ReplaceAll(p, `\`, "/")
	parts := strings.Split(s, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if len(parts[i]) == 2 && parts[i][1] == ':' && isDriveLetter(parts[i][0]) {
			return winpath.Parse(strings.Join(parts[i:], "/") + "/")
		}
	}
	return winpath.Path{}, &os.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
}

func isDriveLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func (f *hostFS) resolve(p string) (string, winpath.Path, error) {
	wp, err := sftpPath(p)
	if err != nil {
		return "", wp, err
	}
	lp, err := winpath.Resolve(f.host.root, wp)
	if err != nil {
		return "", wp, &os.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return lp, wp, nil
}

// errInUse is Windows' ERROR_SHARING_VIOLATION: a running program's file
// cannot be deleted or overwritten (it can be renamed).
func errInUse(path string) error {
	return fmt.Errorf("%s: The process cannot access the file because it is being used by another process", path)
}

// Fileread opens a file for download.
func (f *hostFS) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	lp, _, err := f.resolve(r.Filepath)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(lp)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &os.PathError{Op: "open", Path: r.Filepath, Err: syscall.EISDIR}
	}
	return os.Open(lp)
}

// Filewrite opens a file for upload.
func (f *hostFS) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	return f.open(r)
}

// OpenFile opens a file for reading and writing.
func (f *hostFS) OpenFile(r *sftp.Request) (sftp.WriterAtReaderAt, error) {
	return f.open(r)
}

func (f *hostFS) open(r *sftp.Request) (*os.File, error) {
	lp, _, err := f.resolve(r.Filepath)
	if err != nil {
		return nil, err
	}
	pf := r.Pflags()
	flags := 0
	switch {
	case pf.Read && (pf.Write || pf.Append):
		flags = os.O_RDWR
	case pf.Write || pf.Append || pf.Creat || pf.Trunc:
		flags = os.O_WRONLY
	}
	// O_APPEND conflicts with WriteAt; the client sends offsets anyway.
	if pf.Creat {
		flags |= os.O_CREATE
	}
	if pf.Trunc {
		flags |= os.O_TRUNC
	}
	if pf.Excl {
		flags |= os.O_EXCL
	}
	if fi, err := os.Stat(lp); err == nil && fi.IsDir() {
		return nil, &os.PathError{Op: "open", Path: r.Filepath, Err: syscall.EISDIR}
	}
	if flags&(os.O_WRONLY|os.O_RDWR) != 0 {
		if f.host.inUse(lp) {
			return nil, errInUse(r.Filepath)
		}
		if err := f.host.unshare(lp); err != nil {
			return nil, err
		}
	}
	return os.OpenFile(lp, flags, 0o644)
}

// Filecmd does everything that is not a transfer or a listing.
func (f *hostFS) Filecmd(r *sftp.Request) error {
	lp, wp, err := f.resolve(r.Filepath)
	if err != nil {
		return err
	}
	switch r.Method {
	case "Setstat":
		return f.setstat(r, lp)
	case "Rename", "PosixRename":
		return f.rename(r, lp, wp)
	case "Rmdir":
		fi, err := os.Stat(lp)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &os.PathError{Op: "rmdir", Path: r.Filepath, Err: syscall.ENOTDIR}
		}
		return os.Remove(lp)
	case "Mkdir":
		return os.Mkdir(lp, 0o755)
	case "Remove":
		fi, err := os.Stat(lp)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return &os.PathError{Op: "remove", Path: r.Filepath, Err: syscall.EISDIR}
		}
		if f.host.inUse(lp) {
			return errInUse(r.Filepath)
		}
		return os.Remove(lp)
	case "Link", "Symlink":
		return sftp.ErrSSHFxOpUnsupported
	}
	return sftp.ErrSSHFxOpUnsupported
}

// PosixRename is posix-rename@openssh.com: the same replacing rename.
func (f *hostFS) PosixRename(r *sftp.Request) error {
	return f.Filecmd(r)
}

func (f *hostFS) rename(r *sftp.Request, lp string, wp winpath.Path) error {
	if len(wp.Parts) == 0 {
		return &os.PathError{Op: "rename", Path: r.Filepath, Err: fs.ErrPermission}
	}
	if _, err := os.Lstat(lp); err != nil {
		return err
	}
	target, twp, err := f.resolve(r.Target)
	if err != nil {
		return err
	}
	// Keep the case the client asked for when only the case differs.
	if strings.EqualFold(target, lp) && target != lp {
		return os.Rename(lp, target)
	}
	if tfi, err := os.Stat(target); err == nil && tfi.IsDir() {
		return &os.PathError{Op: "rename", Path: twp.String(), Err: fs.ErrExist}
	}
	if f.host.inUse(target) {
		return errInUse(r.Target)
	}
	return os.Rename(lp, target)
}

func (f *hostFS) setstat(r *sftp.Request, lp string) error {
	flags := r.AttrFlags()
	attrs := r.Attributes()
	// A running program's file stays the one it runs from (its in-use
	// check follows the file): only its times or mode can change, which
	// other hosts sharing it then see too.
	if !f.host.inUse(lp) {
		if err := f.host.unshare(lp); err != nil {
			return err
		}
	}
	if flags.Size {
		if err := os.Truncate(lp, int64(attrs.Size)); err != nil {
			return err
		}
	}
	if flags.Permissions {
		// Windows has ACLs, not modes; keep the owner's read/write/execute
		// so the simulated host can still run and replace the file.
		if err := os.Chmod(lp, fs.FileMode(attrs.Mode&0o777)|0o700); err != nil {
			return err
		}
	}
	if flags.Acmodtime {
		if err := os.Chtimes(lp, time.Unix(int64(attrs.Atime), 0), time.Unix(int64(attrs.Mtime), 0)); err != nil {
			return err
		}
	}
	return nil // owner changes mean nothing on the simulated host
}

// Filelist lists a folder or stats one name.
func (f *hostFS) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	if p := strings.Trim(strings.ReplaceAll(r.Filepath, `\`, "/"), "/"); p == "" {
		// "/" lists the drives, as Windows OpenSSH does.
		root, err := os.Stat(f.host.root)
		if err != nil {
			return nil, err
		}
		if r.Method == "List" {
			return listerAt{renamed{root, "C:"}}, nil
		}
		return listerAt{renamed{root, "/"}}, nil
	}
	lp, wp, err := f.resolve(r.Filepath)
	if err != nil {
		return nil, err
	}
	switch r.Method {
	case "List":
		entries, err := os.ReadDir(lp)
		if err != nil {
			return nil, err
		}
		out := make(listerAt, 0, len(entries))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			out = append(out, info)
		}
		return out, nil
	case "Stat", "Lstat":
		fi, err := os.Stat(lp)
		if err != nil {
			return nil, err
		}
		if len(wp.Parts) == 0 {
			return listerAt{renamed{fi, "C:"}}, nil
		}
		return listerAt{fi}, nil
	case "Readlink":
		return nil, sftp.ErrSSHFxOpUnsupported
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

// RealPath answers realpath requests in the /C:/... form.
func (f *hostFS) RealPath(p string) (string, error) {
	s := strings.ReplaceAll(p, `\`, "/")
	if s == "" || s == "." || !strings.Contains(s, ":") && !strings.HasPrefix(s, "/") {
		s = winpathSFTP(f.host.Profile()) + "/" + s
	}
	if strings.Trim(s, "/") == "" {
		return "/", nil
	}
	wp, err := sftpPath(s)
	if err != nil {
		return "", fmt.Errorf("simulated host: %q is not a path on this host (want /C:/...)", p)
	}
	return wp.SFTP(), nil
}

type listerAt []os.FileInfo

func (l listerAt) ListAt(dst []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(dst, l[off:])
	if n < len(dst) {
		return n, io.EOF
	}
	return n, nil
}

// renamed is a FileInfo under another name (the drive root is "C:").
type renamed struct {
	os.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }

// unshare gives the host its own copy of a file the hosts' file store
// shares (Options.Store) before it is changed, so that no other host's
// file changes with it.
func (h *Host) unshare(linuxPath string) error {
	if h.opts.Store == nil {
		return nil
	}
	return filestore.Unshare(linuxPath)
}
