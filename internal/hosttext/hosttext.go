// Package hosttext makes text that a host wrote safe to show: in events,
// conditions, status fields and log lines. A host (or whoever controls it)
// chooses that text, and a control character in it could forge a log line
// (a newline), rewrite a terminal (an escape sequence) or hide what it
// says (a right-to-left override). Everything winnode shows of a host's
// words goes through Clean, the one place where that is decided.
package hosttext

import (
	"strings"
	"unicode"
)

// Clean returns s with its control characters stripped: line breaks and
// tabs become a space, every other control character (C0, DEL, C1) and
// every Unicode format character (bidirectional overrides, zero-width
// joiners) is dropped, and bytes that are not UTF-8 become U+FFFD.
func Clean(s string) string {
	if clean(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// clean reports whether s needs no change (the common case: no
// allocation).
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
