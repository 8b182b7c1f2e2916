package acl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "C")
	for _, d := range []string{"ProgramData", "Program Files", "Windows"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(filepath.Join(dir, "security.json"), root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A user can create a folder at C:\ and write in it, and in what an
// administrator created at C:\ (Windows' default ACL of C:\), but not in
// C:\Program Files nor C:\Windows.
func TestDefaultsLetUsersWriteUnderDriveRoot(t *testing.T) {
	s := newStore(t)
	bob := s.User("bob", 1)
	if err := bob.Mkdir(`C:\k`); err != nil {
		t.Fatalf("Mkdir C:\\k: %v", err)
	}
	if err := bob.WriteFile(`C:\k\version.dll`, []byte("x")); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if owner, _, _ := s.Get(`C:\k\version.dll`); owner != bob.SID {
		t.Errorf("owner of what bob created = %s, want %s", owner, bob.SID)
	}
	if err := os.Mkdir(filepath.Join(s.root, "var"), 0o755); err != nil { // an administrator creates C:\var
		t.Fatal(err)
	}
	if owner, _, _ := s.Get(`C:\var`); owner != Administrators {
		t.Errorf("owner of what an administrator created = %s", owner)
	}
	if err := bob.WriteFile(`C:\var\x`, nil); err != nil {
		t.Errorf("bob writes in C:\\var (Authenticated Users: Modify, inherited): %v", err)
	}
	for _, p := range []string{`C:\Program Files\winnode`, `C:\Windows\x`} {
		if err := bob.Mkdir(p); !errors.Is(err, ErrAccessDenied) {
			t.Errorf("Mkdir %s: %v, want %v", p, err, ErrAccessDenied)
		}
	}
	// C:\ProgramData: Users create folders; CREATOR OWNER then gives bob
	// full control of his own, and nothing over an administrator's.
	if err := bob.Mkdir(`C:\ProgramData\bob`); err != nil {
		t.Errorf("Mkdir in ProgramData: %v", err)
	}
	os.Mkdir(filepath.Join(s.root, "ProgramData", "winnode"), 0o755)
	os.WriteFile(filepath.Join(s.root, "ProgramData", "winnode", "state.json"), []byte("{}"), 0o644)
	if err := bob.WriteFile(`C:\ProgramData\winnode\state.json`, nil); !errors.Is(err, ErrAccessDenied) {
		t.Errorf("bob overwrites an administrator's file in ProgramData: %v", err)
	}
}

// A protected DACL of SYSTEM and Administrators shuts bob out of the folder
// and all below, created before or after, and survives a reload.
func TestProtectedDACLShutsUsersOut(t *testing.T) {
	s := newStore(t)
	bob := s.User("bob", 1)
	os.MkdirAll(filepath.Join(s.root, "k", "pki"), 0o755)
	os.WriteFile(filepath.Join(s.root, "k", "pki", "key"), []byte("secret"), 0o600)
	if _, err := bob.ReadFile(`C:\k\pki\key`); err != nil {
		t.Fatalf("before: bob reads (Users: read & execute inherited from C:\\): %v", err)
	}
	const dacl = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
	if err := s.Set(`C:\k`, Administrators, dacl); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(s.file, s.root)
	if err != nil {
		t.Fatal(err)
	}
	bob = s2.User("bob", 1)
	if _, err := bob.ReadFile(`C:\k\pki\key`); !errors.Is(err, ErrAccessDenied) {
		t.Errorf("ReadFile: %v", err)
	}
	if err := bob.WriteFile(`C:\k\x.dll`, nil); !errors.Is(err, ErrAccessDenied) {
		t.Errorf("WriteFile: %v", err)
	}
	if err := bob.Rename(`C:\k\pki\key`, `C:\k\pki\key2`); !errors.Is(err, ErrAccessDenied) {
		t.Errorf("Rename: %v", err)
	}
	if owner, got, _ := s2.Get(`C:\k`); owner != Administrators || got != dacl {
		t.Errorf("Get = %s %s", owner, got)
	}
}

// A path deleted and created again is a new object: it does not keep the
// owner recorded for the old one.
func TestRecreatedPathIsNewObject(t *testing.T) {
	s := newStore(t)
	bob := s.User("bob", 1)
	if err := bob.WriteFile(`C:\ProgramData\f`, nil); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(s.root, "ProgramData", "f")
	os.Remove(local)
	os.WriteFile(filepath.Join(s.root, "ProgramData", "g"), nil, 0o644) // take the inode number away
	os.WriteFile(local, nil, 0o644)
	if owner, _, _ := s.Get(`C:\ProgramData\f`); owner != Administrators {
		t.Errorf("owner = %s, want Administrators", owner)
	}
}

func TestParseDACL(t *testing.T) {
	d, err := ParseDACL("D:PAI(A;OICIIO;0x1301bf;;;AU)(A;;LC;;;AU)")
	if err != nil || !d.Protected || len(d.ACEs) != 2 || d.ACEs[0].Flags != ObjectInherit|ContainerInherit|InheritOnly || d.ACEs[0].Mask != 0x1301bf /* icacls "M" */ || d.ACEs[1].SID != AuthenticatedUsers {
		t.Errorf("ParseDACL = %+v, %v", d, err)
	}
	for _, bad := range []string{"O:BA", "D:(D;;FA;;;WD)", "D:(A;XX;FA;;;WD)", "D:(A;;ZZ;;;WD)"} {
		if _, err := ParseDACL(bad); err == nil {
			t.Errorf("ParseDACL(%q) accepted", bad)
		}
	}
}
