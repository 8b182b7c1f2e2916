package plan

import "strings"

// CommandLine composes a Windows command line (a service's BinaryPathName)
// from an executable path and its arguments, quoting each by the rules
// CommandLineToArgvW and the C runtime use to split it again. It produces
// exactly what golang.org/x/sys/windows.ComposeCommandLine and svc/mgr's
// CreateService produce, but it is written here because those packages build
// only for GOOS=windows, and the operator (Linux) renders command lines too.
// A Windows-only test checks both agree.
func CommandLine(binary string, args []string) string {
	var b strings.Builder
	b.WriteString(EscapeArg(binary))
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(EscapeArg(a))
	}
	return b.String()
}

// EscapeArg quotes one argument by the Windows rules: an argument with a
// space or tab is wrapped in double quotes, a double quote is preceded by a
// backslash, and backslashes are doubled only where they precede a double
// quote (or the closing quote). The empty argument becomes `""`.
func EscapeArg(s string) string {
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
			// Double the backslashes that precede the quote, then escape it.
			b.WriteString(strings.Repeat(`\`, slashes+1))
			b.WriteByte(c)
			slashes = 0
		default:
			slashes = 0
			b.WriteByte(c)
		}
	}
	if hasSpace {
		b.WriteString(strings.Repeat(`\`, slashes))
		b.WriteByte('"')
	}
	return b.String()
}
