// Package wincmd builds and splits Windows command lines.
//
// On Windows a program receives one command-line string, and the C runtime
// (CommandLineToArgvW) splits it into arguments with its own quoting rules.
// The operator runs the agent over SSH, the agent writes service command
// lines (BinaryPathName), and the simulator splits what it is asked to run:
// all three must agree with Windows, so the rules live here once. Written by
// hand because golang.org/x/sys/windows (EscapeArg, ComposeCommandLine,
// DecomposeCommandLine) only builds for Windows; wincmd_windows_test.go
// checks this package against those functions, on Windows and under Wine.
package wincmd

import "strings"

// Quote quotes one argument exactly as Go's syscall.EscapeArg on Windows
// does, so that CommandLineToArgvW returns it unchanged: an argument with a
// space or tab is wrapped in double quotes, a double quote gets a backslash,
// and backslashes are doubled only where they precede a double quote or the
// closing quote. The empty argument becomes `""`.
func Quote(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, "\"\\ \t") {
		return s
	}
	hasSpace := strings.ContainsAny(s, " \t")
	var b strings.Builder
	if hasSpace {
		b.WriteByte('"')
	}
	slashes := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			slashes++
			b.WriteByte(c)
		case '"':
			// Double the backslashes before the quote, then escape it.
			b.WriteString(strings.Repeat(`\`, slashes+1))
			b.WriteByte(c)
			slashes = 0
		default:
			slashes = 0
			b.WriteByte(c)
		}
	}
	if hasSpace {
		// Backslashes before the closing quote are doubled.
		b.WriteString(strings.Repeat(`\`, slashes))
		b.WriteByte('"')
	}
	return b.String()
}

// QuoteProgram quotes a program name. Windows reads the program name with no
// backslash escapes (up to the next quote when it starts with one, else up to
// the first space or tab), so it is only wrapped in quotes when it holds a
// space or tab. A program name cannot contain a double quote.
func QuoteProgram(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t") {
		return s
	}
	return `"` + s + `"`
}

// Join builds a command line: the program name (args[0]) with QuoteProgram,
// every other argument with Quote.
func Join(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if i == 0 {
			q[i] = QuoteProgram(a)
		} else {
			q[i] = Quote(a)
		}
	}
	return strings.Join(q, " ")
}

// Split splits a command line by the rules of CommandLineToArgvW (shell32),
// which is how the Microsoft C runtime and Go programs on Windows see their
// arguments:
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
func Split(cmd string) []string {
	var args []string
	cmd = strings.TrimLeft(cmd, " \t")
	if cmd == "" {
		return nil
	}
	if cmd[0] == '"' {
		end := strings.IndexByte(cmd[1:], '"')
		if end < 0 {
			return append(args, cmd[1:])
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
