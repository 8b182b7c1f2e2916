//go:build windows

package wincmd

import (
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/windows"
)

// TestMatchesWindows checks Quote, Join and Split against the Windows
// packages and the real CommandLineToArgvW. Runs on Windows and under Wine
// (hack/wine/test.sh).
func TestMatchesWindows(t *testing.T) {
	args := []string{
		"", "plain", `C:\k\kubelet.exe`, `C:\Program Files\x y\z.exe`, `a"b`, `a\"b`, `trailing\`,
		`with space\`, `two\\`, `"quoted"`, "tab\there", `--flag=a b`, `\\server\share\`, `\"`, `x\\"y`,
		`--config=C:\k\kubelet config.yaml`, `ünïcödé`,
	}
	for _, a := range args {
		if got, want := Quote(a), windows.EscapeArg(a); got != want {
			t.Errorf("Quote(%q) = %q, windows.EscapeArg = %q", a, got, want)
		}
		if got, want := Quote(a), syscall.EscapeArg(a); got != want {
			t.Errorf("Quote(%q) = %q, syscall.EscapeArg = %q", a, got, want)
		}
	}
	exe := `C:\Program Files\winnode\kubelet.exe`
	all := append([]string{exe}, args...)
	line := Join(all...)
	if want := windows.ComposeCommandLine(all); line != want {
		t.Errorf("Join = %s\nComposeCommandLine = %s", line, want)
	}
	back, err := windows.DecomposeCommandLine(line)
	if err != nil {
		t.Fatalf("DecomposeCommandLine: %v", err)
	}
	if !slices.Equal(back, all) {
		t.Errorf("Windows splits %s into\n%q\nwant\n%q", line, back, all)
	}
	if got := Split(line); !slices.Equal(got, back) {
		t.Errorf("Split(%s) = %q, Windows: %q", line, got, back)
	}
}
