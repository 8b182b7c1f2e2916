// Package filestore lets the simulated hosts of one process keep one copy
// of a program file that many of them hold at the same path with the same
// content, so that a fleet of hosts fits on the disk of the machine that
// simulates it. A configured simulated host holds about 400 MB of
// programs (the 45 MB multi-call stand-in as kubelet.exe, kube-proxy.exe,
// flanneld.exe, containerd.exe and the other services, the agent,
// winnode-service): a hundred of them would take 40 GB, each a copy of the
// same bytes.
//
// A real host has its own copy; only this machine's disk is saved, and
// nothing a host or winnode can observe changes:
//
//   - Programs are shared when they start (winexec.Command): the program's
//     own file, and the programs its arguments name, which a service
//     wrapper such as winnode-service.exe starts as its children without
//     the simulator seeing them. By then they are complete, and the file
//     of a running program cannot be written on Windows. Before Linux runs
//     it, the host's file becomes a hard link to the store's copy of that
//     Windows path and content, so that the running process maps the
//     shared copy, not a private one. Only programs (Linux executables)
//     are shared: no program writes its own file in place.
//   - The key is the content and the Windows path (case-insensitive), not
//     the content alone: two files of one host are never one file, so
//     winsim's check that a running program's file is in use (the same
//     file as the one started) still finds only the program that runs on
//     that host from that path, or from where it was renamed to.
//   - Writing a shared file copies it first (Unshare, copy-on-write): the
//     simulated host's SFTP server does before it opens a file for
//     writing or changes its size or mode. Replacing a file (a rename over
//     it, how winnode's agent installs files) or deleting it drops only
//     that host's link. The host's own Linux processes (the agent, the
//     stand-ins) are not intercepted: they never write a program file in
//     place, which Windows refuses while it runs and winnode's agent does
//     not do when it is stopped (it installs by renaming).
//
// Only a process that simulates many hosts wants it (the fleet benchmark);
// hosts without a store keep their own files as before.
package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/winnode/winnode/internal/winpath"
)

// DefaultMinSize is the smallest file worth sharing: the stand-ins and the
// agent are tens of MB; a small program's copy costs little.
const DefaultMinSize = 1 << 20

// Store is a folder of shared copies, one per Windows path and content.
type Store struct {
	dir     string
	minSize int64
	mu      sync.Mutex
}

// elfMagic starts every Linux program, the builds that stand in for
// Windows programs on simulated hosts. Only programs are shared: no
// program writes its own file, while a log or a data file that a program
// names may be written in place, which would change every host's.
const elfMagic = "\x7fELF"

// New returns a store keeping its copies in dir (created if missing), on
// the same file system as the hosts' state folders (hard links do not cross
// file systems). Files smaller than minSize (0: DefaultMinSize) stay each
// host's own.
func New(dir string, minSize int64) (*Store, error) {
	if minSize <= 0 {
		minSize = DefaultMinSize
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simulated hosts' file store: %w", err)
	}
	return &Store{dir: dir, minSize: minSize}, nil
}

// Share makes the host's file linuxPath, the program at wp on its host,
// the store's copy of that path and content: a hard link to it, the first
// host's file becoming the copy. A file shared already, smaller than the
// store's minimum, not a program (a Linux executable), or replaced while
// it was read is left as it is.
func (s *Store) Share(wp winpath.Path, linuxPath string) error {
	f, err := os.Open(linuxPath)
	if err != nil {
		return fmt.Errorf("sharing %s: %w", wp, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sharing %s: %w", wp, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() < s.minSize || links(fi) > 1 {
		return nil
	}
	head := make([]byte, len(elfMagic))
	if _, err := io.ReadFull(f, head); err != nil || string(head) != elfMagic {
		return nil // not a program: a file a program may write in place
	}
	sum := sha256.New()
	sum.Write(head)
	if _, err := io.Copy(sum, f); err != nil {
		return fmt.Errorf("sharing %s: reading it: %w", wp, err)
	}
	key := sha256.Sum256([]byte(strings.ToLower(wp.String()) + "\x00" + hex.EncodeToString(sum.Sum(nil))))
	stored := filepath.Join(s.dir, hex.EncodeToString(key[:]))
	s.mu.Lock()
	defer s.mu.Unlock()
	if now, err := os.Stat(linuxPath); err != nil || !os.SameFile(now, fi) || !now.ModTime().Equal(fi.ModTime()) || now.Size() != fi.Size() {
		return nil // replaced or written meanwhile: shared at its next start
	}
	err = os.Link(linuxPath, stored)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return wrap(wp, err)
	}
	tmp := linuxPath + ".winsim-shared"
	_ = os.Remove(tmp)
	if err := os.Link(stored, tmp); err != nil {
		return wrap(wp, err)
	}
	// rename does nothing when both names are links of one file (another
	// start shared it meanwhile), so the temporary name is removed after.
	err = os.Rename(tmp, linuxPath)
	_ = os.Remove(tmp)
	return wrap(wp, err)
}

func wrap(wp winpath.Path, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sharing %s through the simulated hosts' file store: %w", wp, err)
}

// Unshare gives linuxPath a copy of its own when it is shared (a hard link
// of the store's), before it is written: copy-on-write. A file no store
// shares is left as it is.
func Unshare(linuxPath string) error {
	fi, err := os.Stat(linuxPath)
	if err != nil || !fi.Mode().IsRegular() || links(fi) < 2 {
		return nil // a missing file is created by the write itself
	}
	in, err := os.Open(linuxPath)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(linuxPath), "."+filepath.Base(linuxPath)+".*.unshare")
	if err != nil {
		return err
	}
	_, cerr := io.Copy(out, in)
	cerr = errors.Join(cerr, out.Chmod(fi.Mode().Perm()), out.Close())
	if cerr == nil {
		cerr = os.Chtimes(out.Name(), fi.ModTime(), fi.ModTime())
	}
	if cerr == nil {
		cerr = os.Rename(out.Name(), linuxPath)
	}
	if cerr != nil {
		os.Remove(out.Name())
		return fmt.Errorf("copying %s before it is written (it is shared with other simulated hosts): %w", linuxPath, cerr)
	}
	return nil
}

// links is the file's number of hard links (1 where the system does not
// say).
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
