//go:build windows

package plan

import (
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/windows"
)

// TestCommandLineMatchesWindows checks that CommandLine quotes exactly as
// the Windows packages do, and that Windows (CommandLineToArgvW) splits the
// result back into the same arguments. Runs on Windows and under Wine.
func TestCommandLineMatchesWindows(t *testing.T) {
	args := []string{
		"", "plain", `C:\k\kubelet.exe`, `C:\Program Files\x y\z.exe`, `a"b`, `a\"b`, `trailing\`,
		`with space\`, `two\\`, `"quoted"`, "tab\there", `--flag=a b`, `\\server\share\`, `\"`, `x\\"y`,
		`--config=C:\k\kubelet config.yaml`, `ünïcödé`,
	}
	for _, a := range args {
		if got, want := EscapeArg(a), windows.EscapeArg(a); got != want {
			t.Errorf("EscapeArg(%q) = %q, windows.EscapeArg = %q", a, got, want)
		}
		if got, want := EscapeArg(a), syscall.EscapeArg(a); got != want {
			t.Errorf("EscapeArg(%q) = %q, syscall.EscapeArg = %q", a, got, want)
		}
	}
	exe := `C:\Program Files\winnode\kubelet.exe`
	line := CommandLine(exe, args)
	if want := windows.ComposeCommandLine(append([]string{exe}, args...)); line != want {
		t.Errorf("CommandLine = %s\nComposeCommandLine = %s", line, want)
	}
	back, err := windows.DecomposeCommandLine(line)
	if err != nil {
		t.Fatalf("DecomposeCommandLine: %v", err)
	}
	if want := append([]string{exe}, args...); !slices.Equal(back, want) {
		t.Errorf("Windows splits %s into\n%q\nwant\n%q", line, back, want)
	}
}
