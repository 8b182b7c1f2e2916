package winsim

import (
	"os"
	"strings"
	"testing"
)

// The host's own Windows programs answer over SSH as Windows' do, found
// where cmd.exe finds Windows' (a program of the same name in the current
// folder comes first), and PowerShell runs the host's other programs.
func TestHostsOwnPrograms(t *testing.T) {
	th := newTestHost(t, Options{Hostname: "WIN-SYS", Build: "2022"})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.dial(t)
	for _, tc := range []struct {
		cmdline  string
		code     int
		out, err string // wanted in stdout, stderr
	}{
		{`hostname`, 0, "WIN-SYS\r\n", ""},
		{`C:\Windows\System32\HOSTNAME.EXE`, 0, "WIN-SYS\r\n", ""},
		{`systeminfo`, 0, "\r\nOS Name:                   Microsoft Windows Server 2022 Datacenter\r\n", ""},
		{`powershell -Command "Get-Service nothere"`, 1, "", "Get-Service : Cannot find any service with service name 'nothere'.\r\n"},
		{`powershell -Command "systeminfo | Select-String 'OS Version'"`, 0, "OS Version:                10.0.20348 N/A Build 20348\r\n", ""},
		{`powershell -Command "C:\k\helper.exe fail 3 it broke"`, 1, "", "it broke"},
		{`powershell -Command "C:\k\helper.exe json x"`, 0, `"args":["x"]`, ""},
		{`hostname | more`, 1, "", "cmd.exe operators"},
	} {
		out, errOut, code := run(t, c, tc.cmdline, "")
		if code != tc.code || !strings.Contains(out, tc.out) || (tc.err == "") != (errOut == "") || !strings.Contains(errOut, tc.err) {
			t.Errorf("%s: exit %d (want %d)\nstdout %q (want in it %q)\nstderr %q (want in it %q)", tc.cmdline, code, tc.code, out, tc.out, errOut, tc.err)
		}
	}
	// cmd.exe looks in the current folder first: a hostname.exe there runs
	// instead of Windows' own.
	local, err := th.Path(`C:\Users\Administrator\hostname.exe`)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, []byte("#!/bin/sh\necho folder-hostname\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, _, code := run(t, c, `hostname`, ""); code != 0 || out != "folder-hostname\n" {
		t.Errorf("hostname with a hostname.exe in the current folder: exit %d, stdout %q; want the folder's program", code, out)
	}
}
