package winsim

import (
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/winpath"
)

func TestSFTPPath(t *testing.T) {
	for in, want := range map[string]string{
		"/C:/k/x":                        `C:\k\x`,
		"/c:/K/x/../y":                   `C:\K\y`,
		`/C:/Users/Administrator/C:\k\x`: `C:\k\x`,
		"/C:":                            `C:\`,
		"/C:/":                           `C:\`,
	} {
		got, err := sftpPath(in)
		if err != nil || got.String() != want {
			t.Errorf("sftpPath(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"/", "/etc/passwd", "relative/x", ""} {
		if got, err := sftpPath(in); err == nil {
			t.Errorf("sftpPath(%q) = %v, want an error", in, got)
		}
	}
}

// FuzzSFTPPath: whatever a client sends, the path resolves inside the
// host's C:\ folder or is refused.
func FuzzSFTPPath(f *testing.F) {
	for _, s := range []string{"/C:/k/x", `/C:/a/C:\..\..\etc`, "/C:/../../..", "/D:/x", `\\server\share`, "/C:/k/\x00"} {
		f.Add(s)
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		p, err := sftpPath(s)
		if err != nil {
			return
		}
		lp, err := winpath.Resolve(root, p)
		if err != nil {
			return
		}
		if lp != root && !strings.HasPrefix(lp, root+"/") {
			t.Fatalf("%q resolves to %s, outside %s", s, lp, root)
		}
	})
}
