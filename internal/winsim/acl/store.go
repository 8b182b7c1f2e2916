package acl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/winnode/winnode/internal/winpath"
)

// ErrAccessDenied is Windows' ERROR_ACCESS_DENIED, worded as Windows says it.
//
//lint:ignore ST1005 the simulator copies Windows' message word for word.
var ErrAccessDenied = errors.New("Access is denied.")

// Defaults are the descriptors Windows Server ships on its own folders, as
// `icacls` and Get-Acl show them on a fresh install (and as Microsoft
// documents for C:\: "Authenticated Users can create folders at the root and
// modify what they create", KB for "Default permissions on the system
// drive"; C:\ProgramData: Users may create files and folders, CREATOR OWNER
// gets full control of them; C:\Program Files and C:\Windows: only
// TrustedInstaller, SYSTEM and Administrators write, Users read and
// execute; C:\Users: Users and Everyone read and execute, nothing more).
// Hex masks: 0x1301bf is Modify, 0x1200a9 read & execute, 0x6 is
// "create files / create folders" (WD,AD).
var Defaults = map[string]Entry{
	`C:\`:              {Owner: TrustedInstaller, DACL: "D:PAI(A;OICI;FA;;;BA)(A;OICI;FA;;;SY)(A;OICI;0x1200a9;;;BU)(A;OICIIO;0x1301bf;;;AU)(A;;LC;;;AU)"},
	`C:\ProgramData`:   {Owner: System, DACL: "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICIIO;FA;;;CO)(A;OICI;0x1200a9;;;BU)(A;CI;0x6;;;BU)"},
	`C:\Program Files`: {Owner: TrustedInstaller, DACL: "D:P(A;CI;FA;;;" + TrustedInstaller + ")(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"},
	`C:\Users`:         {Owner: System, DACL: "D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)(A;OICI;0x1200a9;;;WD)"},
	`C:\Windows`:       {Owner: TrustedInstaller, DACL: "D:P(A;CI;FA;;;" + TrustedInstaller + ")(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"},
}

// Entry is what the store keeps of one path: its owner (a SID) and, when it
// has its own, its DACL as SDDL ("" = only what it inherits). Inode ties the
// entry to the file it was recorded for: a path deleted and created again
// is a new object with a new descriptor, as on Windows.
type Entry struct {
	Owner string `json:"owner"`
	DACL  string `json:"dacl,omitempty"`
	Inode uint64 `json:"inode,omitempty"`
}

// Store is one simulated host's security descriptors, persisted in a JSON
// file. Paths are compared case-insensitively. A path with no entry is owned
// by Administrators (Windows' default owner of what an elevated
// administrator creates, which is everything winsim's SSH and SFTP write)
// and has only the ACEs it inherits.
type Store struct {
	mu      sync.Mutex
	file    string
	root    string // the Linux folder holding C:\
	entries map[string]Entry
}

// Open loads the store saved in file for the host whose C:\ is root.
func Open(file, root string) (*Store, error) {
	s := &Store{file: file, root: root, entries: map[string]Entry{}}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("simulated security store: %w", err)
	default:
		if err := json.Unmarshal(data, &s.entries); err != nil {
			return nil, fmt.Errorf("simulated security store: %s is damaged (%v); delete it to start from Windows' defaults", file, err)
		}
	}
	return s, nil
}

func key(p winpath.Path) string { return strings.ToLower(p.String()) }

// entry is the path's own entry, nil if it has none (or a stale one).
// Callers hold s.mu.
func (s *Store) entry(p winpath.Path) (*Entry, error) {
	if e, ok := Defaults[p.String()]; ok {
		if own, ok := s.entries[key(p)]; ok {
			e = own
		}
		return &e, nil
	}
	e, ok := s.entries[key(p)]
	if !ok {
		return nil, nil
	}
	ino, err := s.inode(p)
	if err != nil {
		return nil, err
	}
	if e.Inode != 0 && e.Inode != ino {
		delete(s.entries, key(p))
		return nil, nil
	}
	return &e, nil
}

func (s *Store) inode(p winpath.Path) (uint64, error) {
	local, err := winpath.Resolve(s.root, p)
	if err != nil {
		return 0, err
	}
	fi, err := os.Lstat(local)
	if err != nil {
		return 0, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, nil
	}
	return 0, nil
}

// Get returns the path's owner and its own DACL ("" when it has none and
// only inherits). It fails with an error matching os.ErrNotExist for a
// path that does not exist.
func (s *Store) Get(path string) (owner, dacl string, err error) {
	p, err := winpath.Parse(path)
	if err != nil {
		return "", "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.entry(p)
	if err != nil {
		return "", "", err
	}
	if e == nil {
		return Administrators, "", nil
	}
	if e.Owner == "" {
		e.Owner = Administrators
	}
	return e.Owner, e.DACL, nil
}

// Set gives an existing path an owner (if not "") and its own DACL (if not
// ""), as SetNamedSecurityInfo does. Its descendants keep their owners and
// explicit ACEs and now inherit from the new DACL (SetNamedSecurityInfo
// propagates inheritable ACEs to the children, "SetNamedSecurityInfo",
// https://learn.microsoft.com/windows/win32/api/aclapi/nf-aclapi-setnamedsecurityinfow).
func (s *Store) Set(path, owner, dacl string) error {
	p, err := winpath.Parse(path)
	if err != nil {
		return err
	}
	if dacl != "" {
		if _, err := ParseDACL(dacl); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.entry(p)
	if err != nil {
		return err
	}
	if e == nil {
		e = &Entry{}
	}
	if owner != "" {
		e.Owner = owner
	}
	if dacl != "" {
		e.DACL = dacl
	}
	if e.Inode, err = s.inode(p); err != nil {
		return err
	}
	s.entries[key(p)] = *e
	return s.save()
}

// created records who created a new path. Callers hold s.mu.
func (s *Store) created(p winpath.Path, owner string) error {
	ino, err := s.inode(p)
	if err != nil {
		return err
	}
	s.entries[key(p)] = Entry{Owner: owner, Inode: ino}
	return s.save()
}

func (s *Store) save() error {
	data, err := json.MarshalIndent(s.entries, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("simulated security store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.file), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, s.file)
}

// effective is the list of ACEs that apply to p itself, for deciding
// access: its own ACEs and, unless its DACL is protected, what it inherits
// from its parent's effective ACEs (those marked OI or CI; an inherited
// CREATOR OWNER ACE applies to the object's owner). A folder inherits CI
// ACEs (and OI-only ones as inherit-only, for its files), a file OI ACEs
// ("ACE Inheritance Rules",
// https://learn.microsoft.com/windows/win32/secauthz/ace-inheritance-rules).
// Callers hold s.mu.
func (s *Store) effective(p winpath.Path) (applies, inheritable []ACE, err error) {
	e, err := s.entry(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	owner := Administrators
	var own DACL
	if e != nil {
		if e.Owner != "" {
			owner = e.Owner
		}
		if e.DACL != "" {
			if own, err = ParseDACL(e.DACL); err != nil {
				return nil, nil, err
			}
		}
	}
	all := own.ACEs
	if !own.Protected && len(p.Parts) > 0 {
		_, parentInh, err := s.effective(winpath.Path{Drive: p.Drive, Parts: p.Parts[:len(p.Parts)-1]})
		if err != nil {
			return nil, nil, err
		}
		dir := s.isDir(p)
		for _, a := range parentInh {
			switch {
			case dir && a.Flags&ContainerInherit != 0:
				a.Flags &^= InheritOnly
			case dir: // OI only: passed on to the folder's files, not applied to it
				a.Flags |= InheritOnly
			case a.Flags&ObjectInherit != 0: // a file: OI ACEs apply, CI ones do not reach it
				a.Flags = 0
			default:
				continue
			}
			all = append(all, a)
		}
	}
	for _, a := range all {
		if a.Flags&InheritOnly == 0 {
			if a.SID == CreatorOwner {
				a.SID = owner
			}
			applies = append(applies, a)
		}
		if a.Flags&(ObjectInherit|ContainerInherit) != 0 {
			inheritable = append(inheritable, a)
		}
	}
	return applies, inheritable, nil
}

// allowed reports whether a token holding sids has every right in want on p.
// Callers hold s.mu.
func (s *Store) allowed(p winpath.Path, sids []string, want Right) (bool, error) {
	applies, _, err := s.effective(p)
	if err != nil {
		return false, err
	}
	var granted Right
	for _, a := range applies {
		for _, sid := range sids {
			if strings.EqualFold(a.SID, sid) {
				granted |= a.Mask
			}
		}
	}
	return granted&want == want, nil
}

// isDir reports whether p is a folder; a path that does not exist counts
// as one (only folders are checked before something is created in them).
func (s *Store) isDir(p winpath.Path) bool {
	local, err := winpath.Resolve(s.root, p)
	if err != nil {
		return true
	}
	fi, err := os.Stat(local)
	return err != nil || fi.IsDir()
}
