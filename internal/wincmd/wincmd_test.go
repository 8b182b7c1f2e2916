package wincmd

import (
	"reflect"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	cases := map[string]string{
		``:                       `""`,
		`C:\k\kubelet.exe`:       `C:\k\kubelet.exe`,
		`C:\Program Files\x.exe`: `"C:\Program Files\x.exe"`,
		`a"b`:                    `a\"b`,
		`C:\dir with space\`:     `"C:\dir with space\\"`,
		`--node-labels=a=b,c=d`:  `--node-labels=a=b,c=d`,
		`say \"hi\"`:             `"say \\\"hi\\\""`,
		`a\"b`:                   `a\\\"b`,
		"tab\there":              "\"tab\there\"",
		`\\server\share\`:        `\\server\share\`,
		`say "hi" \ there\\`:     `"say \"hi\" \ there\\\\"`,
	}
	for in, want := range cases {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

// Cases from Microsoft's "Parsing C++ command-line arguments" and
// CommandLineToArgvW's documented behaviour.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{``, nil},
		{`   `, nil},
		{`prog`, []string{"prog"}},
		{`"C:\Program Files\x.exe" a b`, []string{`C:\Program Files\x.exe`, "a", "b"}},
		{`C:\k\kubelet.exe --config=C:\k\c.yaml`, []string{`C:\k\kubelet.exe`, `--config=C:\k\c.yaml`}},
		{`p "a b c" d e`, []string{"p", "a b c", "d", "e"}},
		{`p "ab\"c" "\\" d`, []string{"p", `ab"c`, `\`, "d"}},
		{`p a\\\b d"e f"g h`, []string{"p", `a\\\b`, "de fg", "h"}},
		{`p a\\\"b c d`, []string{"p", `a\"b`, "c", "d"}},
		{`p a\\\\"b c" d e`, []string{"p", `a\\b c`, "d", "e"}},
		{`p "a b" ""`, []string{"p", "a b", ""}},
		{`p "say ""hi"""`, []string{"p", `say "hi"`}},
		{"p\ta\t\tb", []string{"p", "a", "b"}},
		{`"unterminated prog`, []string{"unterminated prog"}},
		{`p "unterminated arg`, []string{"p", "unterminated arg"}},
		{`p trailing\`, []string{"p", `trailing\`}},
		{`C:\a\"b c`, []string{`C:\a\"b`, "c"}}, // no escapes in the program name
	} {
		if got := Split(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJoinRoundTrip(t *testing.T) {
	args := []string{`C:\Program Files\containerd\containerd.exe`, "", "plain", "two words", `C:\Program Files\`, `a"b`, `\\server\share\`, `x\"y`, "tab\there"}
	line := Join(args...)
	if got := Split(line); !reflect.DeepEqual(got, args) {
		t.Errorf("round trip through %q = %q, want %q", line, got, args)
	}
}

// What is split and joined again splits the same, and what is joined splits
// back to the arguments.
func FuzzSplitJoin(f *testing.F) {
	for _, s := range []string{`p "a b" c`, `p a\\\"b`, `"x y" "" \"`, `p "say ""hi"""`, "p\t\"\\\\\"", ` \ 0 0 0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := Split(s)
		if len(args) == 0 || args[0] == "" || strings.ContainsAny(args[0], "\"") {
			return // a program name cannot be empty or hold a quote
		}
		again := Split(Join(args...))
		if !reflect.DeepEqual(again, args) {
			t.Fatalf("Split(%q) = %q; Split(Join(...)) = %q", s, args, again)
		}
	})
}
