package sysprog

import (
	"fmt"
	"strings"
	"unicode"
)

// The little of PowerShell's language the stand-in reads: statements
// (separated by newlines and ;), each a pipeline (|) of commands, each a
// name (or & and a quoted path) and arguments: bare words, 'single' and
// "double" quoted strings (no variables), comma lists, -Parameters, and
// # comments to the end of the line. Anything else ($variables, script
// blocks, subexpressions, redirections) is refused as not simulated.

// psToken is one word of a command, with where it starts (for error
// records, which point at the command).
type psToken struct {
	text   string
	quoted bool // a string literal: never a parameter name
	kind   byte // 0 word, ',' '|' ';' '&'
	line   int  // 1-based
	col    int  // 1-based
	end    int  // column after its last character
}

// psCommand is one command of a pipeline.
type psCommand struct {
	name string
	args []psArg
	// where it is, for error records: its line's text, first column and
	// the column after its last argument.
	lineText       string
	line, col, end int
}

// psArg is an argument: a parameter name (-Tail), or a value, which a
// comma list makes several.
type psArg struct {
	param  string   // without the dash, or ""
	values []string // the value's words
}

// parseScript splits a script into statements of pipelines.
func parseScript(script string) ([][]*psCommand, error) {
	lines := strings.Split(strings.ReplaceAll(script, "\r\n", "\n"), "\n")
	var statements [][]*psCommand
	for i, text := range lines {
		toks, err := tokenize(text, i+1)
		if err != nil {
			return nil, err
		}
		var pipeline []*psCommand
		var cur []psToken
		flush := func() error {
			if len(cur) == 0 {
				return nil
			}
			c, err := newCommand(cur, text)
			if err != nil {
				return err
			}
			pipeline, cur = append(pipeline, c), nil
			return nil
		}
		for _, t := range append(toks, psToken{kind: ';'}) {
			switch t.kind {
			case '|', ';':
				if err := flush(); err != nil {
					return nil, err
				}
				if t.kind == ';' && len(pipeline) > 0 {
					statements, pipeline = append(statements, pipeline), nil
				}
			default:
				cur = append(cur, t)
			}
		}
	}
	return statements, nil
}

// tokenize splits one line into tokens.
func tokenize(text string, line int) ([]psToken, error) {
	var toks []psToken
	r := []rune(text)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '#':
			return toks, nil
		case strings.ContainsRune(",|;&", c):
			toks = append(toks, psToken{text: string(c), kind: byte(c), line: line, col: i + 1, end: i + 2})
			i++
		case c == '\'' || c == '"':
			s, next, err := quoted(r, i)
			if err != nil {
				return nil, psTextf("At line:%d char:%d: %v", line, i+1, err)
			}
			toks = append(toks, psToken{text: s, quoted: true, line: line, col: i + 1, end: next + 1})
			i = next
		case strings.ContainsRune("$({}@<>`", c):
			return nil, psTextf("At line:%d char:%d: %q: variables, script blocks, subexpressions and redirections are not simulated by this simulated host's PowerShell (winsim)", line, i+1, string(c))
		default:
			start := i
			for i < len(r) && !unicode.IsSpace(r[i]) && !strings.ContainsRune(",|;&#'\"", r[i]) {
				i++
			}
			toks = append(toks, psToken{text: string(r[start:i]), line: line, col: start + 1, end: i + 1})
		}
	}
	return toks, nil
}

// quoted reads the string literal that starts at r[i] and returns it and
// the index after it. 'x”y' is x'y; in "x`"y" the backtick escapes.
func quoted(r []rune, i int) (string, int, error) {
	q := r[i]
	var b strings.Builder
	for j := i + 1; j < len(r); j++ {
		switch {
		case r[j] == q && j+1 < len(r) && r[j+1] == q:
			b.WriteRune(q)
			j++
		case r[j] == q:
			return b.String(), j + 1, nil
		case q == '"' && r[j] == '$':
			return "", 0, fmt.Errorf("variables in double-quoted strings are not simulated by this simulated host's PowerShell (winsim)")
		case q == '"' && r[j] == '`' && j+1 < len(r):
			j++
			b.WriteRune(r[j])
		default:
			b.WriteRune(r[j])
		}
	}
	return "", 0, psTextf("The string is missing the terminator: %c.", q)
}

// newCommand makes a command of its tokens: the name (after &, the call
// operator), then arguments, comma lists joined into one.
func newCommand(toks []psToken, lineText string) (*psCommand, error) {
	if first0 := toks[0]; first0.kind == '&' {
		toks = toks[1:]
		if len(toks) == 0 {
			return nil, psTextf("At line:%d char:%d: the call operator & names no command", first0.line, first0.col)
		}
	}
	first := toks[0]
	if first.kind != 0 {
		return nil, psTextf("At line:%d char:%d: unexpected %q", first.line, first.col, first.text)
	}
	c := &psCommand{name: first.text, lineText: lineText, line: first.line, col: first.col, end: toks[len(toks)-1].end}
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == ',':
			if len(c.args) == 0 || c.args[len(c.args)-1].param != "" || i+1 >= len(toks) || toks[i+1].kind != 0 {
				return nil, psTextf("At line:%d char:%d: Missing argument in parameter list.", t.line, t.col)
			}
			i++
			last := &c.args[len(c.args)-1]
			last.values = append(last.values, toks[i].text)
		case t.kind != 0:
			return nil, psTextf("At line:%d char:%d: unexpected %q", t.line, t.col, t.text)
		case !t.quoted && len(t.text) > 1 && t.text[0] == '-' && unicode.IsLetter(rune(t.text[1])):
			c.args = append(c.args, psArg{param: strings.TrimSuffix(t.text[1:], ":")})
		default:
			c.args = append(c.args, psArg{values: []string{t.text}})
		}
	}
	return c, nil
}

// psText is a message of PowerShell's, as it writes it (capitalized, with
// its full stop): text to show, which the parser and the parameter binder
// return as an error.
type psText string

func (t psText) Error() string { return string(t) }

func psTextf(format string, args ...any) error { return psText(fmt.Sprintf(format, args...)) }
