// Package wincmd builds and splits Windows command lines.
//
// On Windows a program receives one command-line string, and the C runtime
// (CommandLineToArgvW) splits it into arguments with its own quoting rules.
// The operator runs the agent over SSH, the agent writes service command
// lines, and the simulator splits what it is asked to run: all three must
// agree with Windows, so the rules live here once. Written by hand because
// golang.org/x/sys/windows (which has EscapeArg) only builds for Windows.
package wincmd

import "strings"

// Quote quotes one argument so that CommandLineToArgvW returns it unchanged
// (the algorithm of Go's syscall.EscapeArg on Windows).
func Quote(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, " \t\n\v\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			// Double the backslashes before a quote, then escape the quote.
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	// Backslashes before the closing quote are doubled.
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}

// Join builds a command line: the program name (args[0]) quoted as Windows
// parses it (see QuoteProgram), every other argument with Quote.
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

// QuoteProgram quotes a program name. Windows reads the program name up to
// the first space or tab outside quotes, with no backslash escapes, so it is
// only wrapped in quotes when it needs them (a program name cannot contain a
// quote).
func QuoteProgram(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t") {
		return s
	}
	return `"` + s + `"`
}

// Split splits a command line the way CommandLineToArgvW does: the program
// name (first argument) ends at the first space outside quotes with no
// backslash processing; later arguments follow the 2n / 2n+1 backslash rules,
// and "" inside a quoted argument is a literal quote.
func Split(cmdline string) []string {
	var args []string
	s := cmdline
	// Program name.
	s = strings.TrimLeft(s, " \t")
	if s == "" {
		return nil
	}
	var name strings.Builder
	inQuote := false
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			inQuote = !inQuote
			continue
		}
		if !inQuote && (c == ' ' || c == '\t') {
			break
		}
		name.WriteByte(c)
	}
	args = append(args, name.String())
	s = s[i:]

	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return args
		}
		var arg strings.Builder
		inQuote = false
		i = 0
		for i < len(s) {
			c := s[i]
			if c == '\\' {
				n := 0
				for i < len(s) && s[i] == '\\' {
					n++
					i++
				}
				if i < len(s) && s[i] == '"' {
					arg.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						arg.WriteByte('"')
						i++
					}
					continue
				}
				arg.WriteString(strings.Repeat(`\`, n))
				continue
			}
			if c == '"' {
				if inQuote && i+1 < len(s) && s[i+1] == '"' {
					arg.WriteByte('"')
					i += 2
					continue
				}
				inQuote = !inQuote
				i++
				continue
			}
			if !inQuote && (c == ' ' || c == '\t') {
				break
			}
			arg.WriteByte(c)
			i++
		}
		args = append(args, arg.String())
		s = s[i:]
	}
}
