package wincmd

import (
	"reflect"
	"testing"
)

func TestQuote(t *testing.T) {
	cases := map[string]string{
		``:                       `""`,
		`C:\k\kubelet.exe`:       `C:\k\kubelet.exe`,
		`C:\Program Files\x.exe`: `"C:\Program Files\x.exe"`,
		`a"b`:                    `"a\"b"`,
		`C:\dir with space\`:     `"C:\dir with space\\"`,
		`--node-labels=a=b,c=d`:  `--node-labels=a=b,c=d`,
		`say \"hi\"`:             `"say \\\"hi\\\""`,
	}
	for in, want := range cases {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

// Documented examples of CommandLineToArgvW (Microsoft's "Parsing C++
// command-line arguments" table).
func TestSplitMicrosoftExamples(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{`prog "a b c" d e`, []string{"prog", "a b c", "d", "e"}},
		{`prog "ab\"c" "\\" d`, []string{"prog", `ab"c`, `\`, "d"}},
		{`prog a\\\b d"e f"g h`, []string{"prog", `a\\\b`, "de fg", "h"}},
		{`prog a\\\"b c d`, []string{"prog", `a\"b`, "c", "d"}},
		{`prog a\\\\"b c" d e`, []string{"prog", `a\\b c`, "d", "e"}},
		{`"C:\Program Files\x.exe" --v=2`, []string{`C:\Program Files\x.exe`, "--v=2"}},
		{`C:\k\a.exe "a""b"`, []string{`C:\k\a.exe`, `a"b`}},
		{`  `, nil},
	}
	for _, c := range cases {
		if got := Split(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(`C:\k\kubelet.exe`, `a b`, `"`, `\\"x`)
	f.Fuzz(func(t *testing.T, prog, a, b, c string) {
		// The program name is never escaped by Windows: keep it to what a
		// path can hold.
		for _, r := range prog {
			if r == '"' || r == 0 {
				return
			}
		}
		if prog == "" {
			return
		}
		args := []string{prog, a, b, c}
		for _, s := range args[1:] {
			for _, r := range s {
				if r == 0 {
					return
				}
			}
		}
		got := Split(Join(args...))
		if !reflect.DeepEqual(got, args) {
			t.Fatalf("Split(Join(%q)) = %q", args, got)
		}
	})
}
