package hosttext

import (
	"testing"
	"unicode"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, nothing to do":            "plain text, nothing to do",
		"two\nlines\r\nand\ta tab":             "two lines  and a tab",
		"bell\a escape\x1b[31mred\x1b[0m":      "bell escape[31mred[0m",
		"del\x7f and C1 \u0085\u009b":          "del and C1 ",
		"right-to-left \u202eevil\u202c":       "right-to-left evil",
		"zero\u200bwidth":                      "zerowidth",
		"not utf-8 \xff\xfe":                   "not utf-8 \uFFFD",
		"Windows-Server-2022 ünïcödé 日本":       "Windows-Server-2022 ünïcödé 日本",
		"":                                     "",
		"forged\nlevel=error msg=\"operator\"": "forged level=error msg=\"operator\"",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever comes in, nothing of a control or format character comes out.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"a\nb", "\x1b[2J", "\u202e", "\xff", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Clean(s) {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("Clean(%q) keeps %U", s, r)
			}
		}
	})
}
