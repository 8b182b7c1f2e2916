package winexec

import (
	"reflect"
	"strings"
	"testing"
)

// Cases from Microsoft's "Parsing C++ command-line arguments" and
// CommandLineToArgvW's documented behaviour.
func TestSplitCommandLine(t *testing.T) {
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
		if got := SplitCommandLine(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitCommandLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJoinCommandLineRoundTrip(t *testing.T) {
	args := []string{"", "plain", "two words", `C:\Program Files\`, `a"b`, `\\server\share\`, `x\"y`, "tab\there"}
	line := JoinCommandLine(`C:\Program Files\containerd\containerd.exe`, args...)
	got := SplitCommandLine(line)
	want := append([]string{`C:\Program Files\containerd\containerd.exe`}, args...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip through %q = %q, want %q", line, got, want)
	}
}

func FuzzSplitCommandLine(f *testing.F) {
	for _, s := range []string{`p "a b" c`, `p a\\\"b`, `"x y" "" \"`, `p "say ""hi"""`, "p\t\"\\\\\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := SplitCommandLine(s)
		if len(args) == 0 {
			return
		}
		// Quoting what was split gives the same arguments back.
		if strings.ContainsAny(args[0], "\"") || args[0] == "" {
			return
		}
		again := SplitCommandLine(JoinCommandLine(args[0], args[1:]...))
		if !reflect.DeepEqual(again, args) {
			t.Fatalf("split(%q) = %q; split(join(...)) = %q", s, args, again)
		}
	})
}

func TestCheckOperators(t *testing.T) {
	if err := CheckOperators(`p "a & b" "x>y"`); err != nil {
		t.Errorf("quoted operators refused: %v", err)
	}
	for _, s := range []string{`p a & q`, `p > out.txt`, `p | more`, `p ^a`} {
		if err := CheckOperators(s); err == nil {
			t.Errorf("CheckOperators(%q) accepted cmd.exe operators", s)
		}
	}
}
