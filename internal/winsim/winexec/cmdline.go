// Package winexec is how a simulated Windows host runs a program: it splits a
// Windows command line the way CommandLineToArgvW does, finds the program in
// the host's filesystem the way cmd.exe does (PATH, PATHEXT, case-insensitive
// names), refuses what a simulated host cannot run, and builds the Linux
// process that stands in for the Windows one.
//
// The SSH server (exec requests) and the simulated service control manager
// (BinaryPathName) both go through it, so a program starts the same way
// whether the operator runs it over SSH or the SCM starts it as a service.
package winexec

import (
	"strings"
)

// SplitCommandLine splits a Windows command line into arguments by the rules
// of CommandLineToArgvW (shell32), which is how the Microsoft C runtime and Go
// programs on Windows see their arguments:
//
//   - the program name (first argument) ends at the first space or tab, or,
//     when it starts with a double quote, at the next double quote; no
//     backslash escapes apply to it;
//   - later arguments are separated by spaces and tabs outside double quotes;
//   - 2n backslashes followed by a double quote give n backslashes and the
//     quote opens or closes a quoted part; 2n+1 backslashes followed by a
//     double quote give n backslashes and a literal double quote;
//   - backslashes not followed by a double quote are literal;
//   - inside a quoted part, two double quotes give one literal double quote.
//
// It is written here because golang.org/x/sys/windows.DecomposeCommandLine
// only exists on Windows (it calls the real API).
func SplitCommandLine(cmd string) []string {
	var args []string
	// Program name.
	cmd = strings.TrimLeft(cmd, " \t")
	if cmd == "" {
		return nil
	}
	if cmd[0] == '"' {
		end := strings.IndexByte(cmd[1:], '"')
		if end < 0 {
			args = append(args, cmd[1:])
			return args
		}
		args = append(args, cmd[1:1+end])
		cmd = cmd[2+end:]
	} else {
		end := strings.IndexAny(cmd, " \t")
		if end < 0 {
			return append(args, cmd)
		}
		args = append(args, cmd[:end])
		cmd = cmd[end:]
	}
	for {
		cmd = strings.TrimLeft(cmd, " \t")
		if cmd == "" {
			return args
		}
		var arg string
		arg, cmd = readArg(cmd)
		args = append(args, arg)
	}
}

// readArg reads one argument after the program name.
func readArg(cmd string) (arg, rest string) {
	var b strings.Builder
	inQuote := false
	slashes := 0
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch c {
		case '\\':
			slashes++
			continue
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes/2))
			if slashes%2 == 1 {
				b.WriteByte('"')
			} else if inQuote && i+1 < len(cmd) && cmd[i+1] == '"' {
				b.WriteByte('"')
				i++
			} else {
				inQuote = !inQuote
			}
			slashes = 0
			continue
		case ' ', '\t':
			if !inQuote {
				b.WriteString(strings.Repeat(`\`, slashes))
				return b.String(), cmd[i+1:]
			}
		}
		b.WriteString(strings.Repeat(`\`, slashes))
		slashes = 0
		b.WriteByte(c)
	}
	b.WriteString(strings.Repeat(`\`, slashes))
	return b.String(), ""
}

// QuoteArg quotes one argument so that SplitCommandLine (and any Windows
// program) reads it back unchanged. Arguments that need no quoting are
// returned as they are.
func QuoteArg(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0 // backslashes just written
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			slashes++
			b.WriteByte(c)
		case '"':
			// n backslashes already written; n+1 more and the quote read back
			// as n backslashes and a literal quote.
			b.WriteString(strings.Repeat(`\`, slashes+1))
			b.WriteByte(c)
			slashes = 0
		default:
			slashes = 0
			b.WriteByte(c)
		}
	}
	b.WriteString(strings.Repeat(`\`, slashes)) // double the trailing backslashes before the closing quote
	b.WriteByte('"')
	return b.String()
}

// JoinCommandLine builds a command line from a program path and its
// arguments. The program name is always quoted when it holds a space, and may
// not contain a double quote (Windows file names cannot).
func JoinCommandLine(program string, args ...string) string {
	var b strings.Builder
	if strings.ContainsAny(program, " \t") || program == "" {
		b.WriteString(`"` + program + `"`)
	} else {
		b.WriteString(program)
	}
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(QuoteArg(a))
	}
	return b.String()
}
