package host

import (
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	ok := []struct {
		args []string
		want string
	}{
		{[]string{`C:\k\winnode-agent.exe`, "info"}, `C:\k\winnode-agent.exe info`},
		{[]string{`C:\k\winnode-agent.exe`, "apply", "--plan", `C:\k\staging\plan.json`}, `C:\k\winnode-agent.exe apply --plan C:\k\staging\plan.json`},
		{[]string{`C:\k\a.exe`, "--url=https://10.0.0.1:6443", "--x=a+b"}, `C:\k\a.exe --url=https://10.0.0.1:6443 --x=a+b`},
	}
	for _, tc := range ok {
		got, err := commandLine(tc.args)
		if err != nil || got != tc.want {
			t.Errorf("commandLine(%q) = %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	bad := [][]string{
		nil,
		{`C:\Program Files\x.exe`},                  // space: cmd.exe strips the quotes
		{`C:\k\a.exe`, ""},                          // PowerShell drops empty arguments
		{`C:\k\a.exe`, "%PATH%"},                    // cmd.exe expands
		{`C:\k\a.exe`, "a&b"},                       // cmd.exe operator
		{`C:\k\a.exe`, "$env:x"},                    // PowerShell expands
		{`C:\k\a.exe`, "a;b"},                       // PowerShell separator
		{`C:\k\a.exe`, `{"json":1}`},                // data belongs on stdin
		{`C:\k\a.exe`, "line\nbreak"},               // a second command
		{`C:\k\a.exe`, "nul\x00"},                   // NUL
		{`C:\k\a.exe`, "caf\u00e9"},                 // outside the safe set
		{`C:\k\a.exe`, "a|b", "c"},                  // pipe
		{`C:\k\a.exe`, "@splat"},                    // PowerShell splatting
		{`C:\k\a.exe`, `"quoted"`},                  // quotes
		{`C:\k\a.exe`, "a,b"},                       // PowerShell array
		{`C:\k\a.exe`, "~"},                         // PowerShell home
		{`C:\k\a.exe`, "(x)"},                       // PowerShell subexpression
		{`C:\k\a.exe`, "a^b"},                       // cmd.exe escape
		{`C:\k\a.exe`, "a<b"},                       // redirection
		{`C:\k\a.exe`, "a`b"},                       // PowerShell escape
		{`C:\k\a.exe`, "a!b"},                       // delayed expansion
		{`C:\k\a.exe`, "tab\there"},                 // whitespace
		{`C:\k\a.exe`, strings.Repeat("'", 2)},      // PowerShell string
		{`C:\k\a.exe`, "a>b"},                       // redirection
		{`C:\k\a.exe`, "a b"},                       // space
		{`C:\k\a.exe`, "#comment"},                  // PowerShell comment
		{`C:\k\a.exe`, "a*b"},                       // wildcard
		{`C:\k\a.exe`, "a?b"},                       // wildcard
		{`C:\k\a.exe`, "[a]"},                       // PowerShell type
		{`C:\k\a.exe`, "a\rb"},                      // carriage return
		{`C:\k\a.exe`, "\u200b"},                    // invisible
		{`C:\k\a.exe`, "a&&b"},                      // chain
		{`C:\k\a.exe`, "--token=abc def"},           // space in a value
		{`C:\k\a.exe`, `--path=C:\Program Files\x`}, // space in a path
	}
	for _, args := range bad {
		if got, err := commandLine(args); err == nil {
			t.Errorf("commandLine(%q) = %q, want an error", args, got)
		}
	}
}

func TestBuffers(t *testing.T) {
	h := &headBuffer{max: 10}
	for _, s := range []string{"hello", "world", "!!!"} {
		if n, err := h.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("headBuffer.Write = %d, %v", n, err)
		}
	}
	if string(h.Bytes()) != "helloworld" || !h.overflow {
		t.Errorf("headBuffer = %q overflow=%v, want %q overflow=true", h.Bytes(), h.overflow, "helloworld")
	}
	h = &headBuffer{max: 10}
	h.Write([]byte("0123456789"))
	if h.overflow {
		t.Errorf("exactly max bytes is not an overflow")
	}

	tb := &tailBuffer{max: 4}
	for _, s := range []string{"ab", "cdefgh", "ij", "k"} {
		tb.Write([]byte(s))
	}
	if string(tb.Bytes()) != "hijk" {
		t.Errorf("tailBuffer = %q, want %q", tb.Bytes(), "hijk")
	}
}
