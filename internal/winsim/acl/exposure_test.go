package acl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What an administrator runs is exposed when a local user could have
// replaced it or planted a DLL beside it: anything under a folder an
// administrator created at C:\ (it inherits "Authenticated Users: Modify"),
// anything a user owns; not what sits in a folder with a protected DACL of
// SYSTEM and Administrators, a profile folder, or C:\Program Files.
func TestUserExposure(t *testing.T) {
	s := newStore(t)
	for _, d := range []string{"k", "secured", "Users/Administrator", "Program Files/tool"} {
		dir := filepath.Join(s.root, filepath.FromSlash(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a.exe"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{`C:\secured`, `C:\Users\Administrator`} {
		if err := s.Set(p, Administrators, "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"); err != nil {
			t.Fatal(err)
		}
	}
	bob := s.User("bob", 1)
	if err := bob.Mkdir(`C:\bob`); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.root, "bob", "a.exe"), nil, 0o755); err != nil { // an administrator writes into bob's folder
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		`C:\k\a.exe`:                   `local users may write C:\k\a.exe`,
		`C:\bob\a.exe`:                 `local users may write C:\bob\a.exe`, // inherited through bob's folder
		`C:\secured\a.exe`:             "",
		`C:\Users\Administrator\a.exe`: "",
		`C:\Program Files\tool\a.exe`:  "",
	} {
		got, err := s.UserExposure(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got != want {
			t.Errorf("UserExposure(%s) = %q, want %q", path, got, want)
		}
	}
	// bob's folder, even once given a protected DACL, is still bob's: he can
	// change it back.
	if err := s.Set(`C:\bob`, "", "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.UserExposure(`C:\bob\a.exe`); !strings.Contains(got, `C:\bob is owned by `+bob.SID) {
		t.Errorf("UserExposure of a program in a folder bob owns = %q", got)
	}
}
