package acl

import (
	"fmt"
	"os"

	"github.com/winnode/winnode/internal/winpath"
)

// User is a simulated local user who is not an administrator: what such a
// user can do to the host's files, decided by the access check Windows
// makes for the user's token ("How AccessCheck Works",
// https://learn.microsoft.com/windows/win32/secauthz/how-dacls-control-access-to-an-object).
// Tests use it to play the attacker of issue 11. What the user creates is
// owned by the user (Windows' default owner for a non-administrator).
type User struct {
	Name string
	SID  string
	s    *Store
}

// User returns the simulated local user name, with the nth user SID of the
// simulated machine (1001 for the first, as Windows numbers local users).
func (s *Store) User(name string, n int) *User {
	return &User{Name: name, SID: fmt.Sprintf("%s%d", simulatedUserPrefix, 1000+n), s: s}
}

// token is the user's SID and the groups every interactive local user is
// in: Everyone, Authenticated Users, Users.
func (u *User) token() []string { return []string{u.SID, Everyone, AuthenticatedUsers, Users} }

func (u *User) check(p winpath.Path, want Right) error {
	ok, err := u.s.allowed(p, u.token(), want)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("simulated user %s: %s: %w", u.Name, p, ErrAccessDenied)
	}
	return nil
}

func (u *User) resolve(path string) (winpath.Path, string, error) {
	p, err := winpath.Parse(path)
	if err != nil {
		return p, "", err
	}
	local, err := winpath.Resolve(u.s.root, p)
	return p, local, err
}

func parent(p winpath.Path) winpath.Path {
	return winpath.Path{Drive: p.Drive, Parts: p.Parts[:len(p.Parts)-1]}
}

// Mkdir creates a folder: the parent must grant "create folders".
func (u *User) Mkdir(path string) error {
	p, local, err := u.resolve(path)
	if err != nil {
		return err
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if err := u.check(parent(p), AddFolder); err != nil {
		return err
	}
	if err := os.Mkdir(local, 0o755); err != nil {
		return err
	}
	return u.s.created(p, u.SID)
}

// WriteFile writes a file: an existing one must grant write, a new one's
// folder "create files".
func (u *User) WriteFile(path string, data []byte) error {
	p, local, err := u.resolve(path)
	if err != nil {
		return err
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	_, statErr := os.Lstat(local)
	if statErr == nil {
		if err := u.check(p, WriteData); err != nil {
			return err
		}
		return os.WriteFile(local, data, 0o644)
	}
	if err := u.check(parent(p), AddFile); err != nil {
		return err
	}
	if err := os.WriteFile(local, data, 0o644); err != nil {
		return err
	}
	return u.s.created(p, u.SID)
}

// ReadFile reads a file the user may read.
func (u *User) ReadFile(path string) ([]byte, error) {
	p, local, err := u.resolve(path)
	if err != nil {
		return nil, err
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if err := u.check(p, ReadData); err != nil {
		return nil, err
	}
	return os.ReadFile(local)
}

// Remove deletes a file or empty folder: it must grant DELETE, or its
// folder FILE_DELETE_CHILD.
func (u *User) Remove(path string) error {
	p, local, err := u.resolve(path)
	if err != nil {
		return err
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if err := u.mayDelete(p); err != nil {
		return err
	}
	return os.Remove(local)
}

func (u *User) mayDelete(p winpath.Path) error {
	if u.check(p, Delete) == nil {
		return nil
	}
	return u.check(parent(p), DeleteChild)
}

// Rename moves a file (replacing what the target names): the source must
// be deletable, the target folder must grant "create files", and an
// existing target must be deletable. The file keeps its descriptor.
func (u *User) Rename(from, to string) error {
	pf, lf, err := u.resolve(from)
	if err != nil {
		return err
	}
	pt, lt, err := u.resolve(to)
	if err != nil {
		return err
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if err := u.mayDelete(pf); err != nil {
		return err
	}
	if err := u.check(parent(pt), AddFile); err != nil {
		return err
	}
	if _, err := os.Lstat(lt); err == nil {
		if err := u.mayDelete(pt); err != nil {
			return err
		}
	}
	e, ok := u.s.entries[key(pf)]
	if err := os.Rename(lf, lt); err != nil {
		return err
	}
	if ok {
		delete(u.s.entries, key(pf))
		u.s.entries[key(pt)] = e
	}
	return u.s.save()
}
