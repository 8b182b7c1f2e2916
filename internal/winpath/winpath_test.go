package winpath

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in, win, sftp string
		bad           bool
	}{
		{in: `C:\k\kubelet.exe`, win: `C:\k\kubelet.exe`, sftp: "/C:/k/kubelet.exe"},
		{in: `c:/k/x`, win: `C:\k\x`, sftp: "/C:/k/x"},
		{in: `/C:/k/x`, win: `C:\k\x`, sftp: "/C:/k/x"},
		{in: `C:\k\..\k\.\x\`, win: `C:\k\x`, sftp: "/C:/k/x"},
		{in: `C:\..\..\x`, win: `C:\x`, sftp: "/C:/x"},
		{in: `C:\`, win: `C:\`, sftp: "/C:/"},
		{in: `k\x`, bad: true},
		{in: `\\server\share\x`, bad: true},
		{in: `C:k`, bad: true},
		{in: `C:\a|b`, bad: true},
		{in: "C:\\a\x00b", bad: true},
		{in: ``, bad: true},
	}
	for _, c := range cases {
		p, err := Parse(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error", c.in, p)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if p.String() != c.win || p.SFTP() != c.sftp {
			t.Errorf("Parse(%q) = %q / %q, want %q / %q", c.in, p.String(), p.SFTP(), c.win, c.sftp)
		}
	}
}

func TestJoinDirBase(t *testing.T) {
	p, _ := Parse(`C:\k`)
	j := p.Join(`bin\kubelet.exe`, "../x.exe")
	if j.String() != `C:\k\bin\x.exe` || j.Dir().String() != `C:\k\bin` || j.Base() != "x.exe" {
		t.Fatalf("got %s dir %s base %s", j, j.Dir(), j.Base())
	}
	if !j.Equal(Path{Drive: "C", Parts: []string{"K", "BIN", "X.EXE"}}) {
		t.Fatal("paths differing in case only must be equal")
	}
}

func TestResolveCaseInsensitive(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "Program Files", "containerd"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ResolveString(root, `c:\PROGRAM FILES\ContainerD\new.exe`)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "Program Files", "containerd", "new.exe")
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := ResolveString(root, `D:\x`); err == nil {
		t.Fatal("drive D: must not exist")
	}
	if got, _ := ResolveString(root, `C:\..\..\etc\passwd`); got != filepath.Join(root, "etc", "passwd") {
		t.Fatalf("escaped root: %s", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`C:\k\x`, `/C:/a/../b`, `c:`, `\\x\y`, "C:\\\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		// A parsed path round-trips through both printed forms.
		for _, form := range []string{p.String(), p.SFTP()} {
			q, err := Parse(form)
			if err != nil || q.String() != p.String() {
				t.Fatalf("%q -> %q does not round-trip: %v", s, form, err)
			}
		}
	})
}
