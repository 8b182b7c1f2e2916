package acl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/winpath"
)

// trustedOwners own only what administrators may change: an owner can
// always rewrite an object's DACL, so anything else owning a program or a
// folder above it could have changed what the program is.
var trustedOwners = []string{System, Administrators, TrustedInstaller}

// UserExposure says how a local user who is not an administrator could
// have replaced the program at path, or planted a DLL that it loads, before
// an administrator runs it, or "" when no such user could. It is not
// something Windows does by itself but the check an auditor makes of what
// runs elevated, from what Windows documents: a program loads DLLs from
// its own folder first ("Dynamic-link library search order",
// https://learn.microsoft.com/windows/win32/dlls/dynamic-link-library-search-order),
// an owner may always change the DACL, and renaming a file or folder aside
// takes DELETE on it or FILE_DELETE_CHILD on its folder. The simulated SSH
// server asks it of every program it runs (execaudit.go), so that tests
// can show winnode never runs what such a user could have written.
func (s *Store) UserExposure(path string) (string, error) {
	p, err := winpath.Parse(path)
	if err != nil {
		return "", err
	}
	if len(p.Parts) == 0 {
		return "", fmt.Errorf("simulated security store: %s is a drive root, not a program", p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	anyUser := []string{simulatedUserPrefix + "999", Everyone, AuthenticatedUsers, Users}
	may := func(q winpath.Path, r Right) (bool, error) { return s.allowed(q, anyUser, r) }

	if ok, err := may(p, WriteData); ok || err != nil {
		return fmt.Sprintf("local users may write %s", p), err
	}
	if ok, err := may(parent(p), AddFile); ok || err != nil {
		return fmt.Sprintf("local users may create files (a DLL beside %s) in %s", p.Base(), parent(p)), err
	}
	for q := p; len(q.Parts) > 0; q = parent(q) {
		if why, err := s.exposedObject(q, may); why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}

// exposedObject checks one object on the way from a program up to its
// drive: its owner, and whether it may be renamed aside. Callers hold s.mu.
func (s *Store) exposedObject(q winpath.Path, may func(winpath.Path, Right) (bool, error)) (string, error) {
	owner := Administrators
	e, err := s.entry(q)
	if err != nil {
		return "", err
	}
	if e != nil && e.Owner != "" {
		owner = e.Owner
	}
	if !slices.ContainsFunc(trustedOwners, func(t string) bool { return strings.EqualFold(t, owner) }) {
		return fmt.Sprintf("%s is owned by %s", q, owner), nil
	}
	if ok, err := may(q, Delete); ok || err != nil {
		return fmt.Sprintf("local users may delete or rename %s", q), err
	}
	if ok, err := may(parent(q), DeleteChild); ok || err != nil {
		return fmt.Sprintf("local users may delete or rename %s (delete-child on its folder)", q), err
	}
	return "", nil
}
