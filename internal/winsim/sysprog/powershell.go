package sysprog

import (
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"unicode/utf16"
)

// powershell copies powershell.exe (Windows PowerShell 5.1) run with a
// command, as `ssh host powershell -Command "Get-Service kubelet"` runs
// it: its command-line parameters (about_PowerShell_exe: -Command and -c,
// the rest of the line being the command, "-" reading it from standard
// input; -EncodedCommand; a first argument that is no parameter starts the
// command; -NoProfile, -NonInteractive, -NoLogo, -ExecutionPolicy,
// -WindowStyle, -InputFormat, -OutputFormat accepted), its exit status (0
// when the last command succeeded, 1 when it failed, as $? says), how the
// end of a pipeline shows objects (psformat.go), and error records as its
// console writes them.
//
// Of the language it reads what pstokens.go says, and of the commands
// those in pscmdlets.go (Get-Service, Get-Content, Get-HnsNetwork,
// Select-Object, Select-String) and the programs of the host (systeminfo,
// C:\k\winnode-agent.exe, ...). Any other name gets PowerShell's "is not
// recognized" error, which for a name of a cmdlet's form adds which
// cmdlets this PowerShell has. No interactive session is simulated.
func powershell(e *Env, args []string) int {
	script, err := psCommandLine(e, args)
	if err != nil {
		crlf(e.Stderr, err.Error()+"\n")
		return 1
	}
	statements, err := parseScript(script)
	if err != nil {
		crlf(e.Stderr, err.Error()+"\n")
		return 1
	}
	ok := true
	for _, pipeline := range statements {
		ok = runPipeline(e, pipeline)
	}
	if !ok {
		return 1
	}
	return 0
}

// psCommandLine reads powershell.exe's parameters and returns the command
// to run.
func psCommandLine(e *Env, args []string) (string, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "" || (a[0] != '-' && a[0] != '/') {
			return strings.Join(args[i:], " "), nil
		}
		switch name := strings.ToLower(a[1:]); name {
		case "command", "c":
			rest := strings.Join(args[i+1:], " ")
			if rest == "-" {
				data, err := io.ReadAll(e.Stdin)
				return string(data), err
			}
			return rest, nil
		case "encodedcommand", "enc", "ec", "e":
			if i+1 >= len(args) {
				return "", psText("Cannot process the command because of a missing parameter. A command must follow -EncodedCommand.")
			}
			return decodeCommand(args[i+1])
		case "noprofile", "nop", "noninteractive", "noni", "nologo", "nol", "mta", "sta":
		case "executionpolicy", "ep", "ex", "windowstyle", "w", "inputformat", "if", "outputformat", "of":
			i++
		case "file", "f":
			return "", errors.New("powershell.exe -File: running script files is not simulated on this simulated host (winsim); pass -Command")
		default:
			return strings.Join(args[i:], " "), nil
		}
	}
	return "", psText("This is a simulated Windows host (winsim): an interactive PowerShell session is not simulated.\nPass a command: powershell -Command \"Get-Service kubelet\"")
}

// decodeCommand decodes -EncodedCommand: base64 of UTF-16LE.
func decodeCommand(s string) (string, error) {
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(data)%2 != 0 {
		return "", psText("Cannot process the command because the value specified with -EncodedCommand is not properly encoded. The value must be Base64 encoded.")
	}
	u := make([]uint16, len(data)/2)
	for i := range u {
		u[i] = uint16(data[2*i]) | uint16(data[2*i+1])<<8
	}
	return string(utf16.Decode(u)), nil
}

// runPipeline runs one pipeline and shows what comes out of it; false when
// its last command failed ($? false).
func runPipeline(e *Env, pipeline []*psCommand) bool {
	var values []any
	var errs strings.Builder
	ok := true
	for i, c := range pipeline {
		var out []any
		out, ok = runCommand(e, c, values, i == 0, &errs)
		values = out
		if errs.Len() > 0 {
			crlf(e.Stderr, errs.String())
			errs.Reset()
		}
	}
	var b strings.Builder
	outDefault(&b, values)
	crlf(e.Stdout, b.String())
	return ok
}
