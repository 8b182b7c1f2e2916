// Command flags reads a program's --help on stdin and prints the names of
// the flags it accepts, one a line, for the stand-ins of internal/winsim
// (which refuse every other flag, as the real program does):
//
//	flags pflag  < help.txt   kubelet, kube-proxy (spf13/pflag's FlagUsages)
//	flags goflag < help.txt   flanneld (Go's flag.PrintDefaults)
//	flags urfave < help.txt   containerd (github.com/urfave/cli's GLOBAL OPTIONS)
//	flags kingpin < help.txt  windows_exporter (github.com/alecthomas/kingpin/v2's Flags:)
//
// Each line is `NAME KIND [SHORTHAND]`: KIND is bool for a flag that takes
// no value (help shows no type for it), value for one that does, and
// optional=DEFAULT for one whose value may be left out. The
// payload build (hack/payload/build.sh) runs it on each program's --help
// under Wine.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// pflag's FlagUsages: "  -v, --v Level   usage" or "      --name type   usage"
// (exactly these indentations); the type is absent for a bool flag. Usage
// continuation lines are indented further, to the usage column.
var pflagLine = regexp.MustCompile(`^(?:  -([A-Za-z0-9]), |      )--([A-Za-z0-9][\w.-]*)(?: ([^\s]+))?(?:\s{2,}|$)`)

// urfave/cli v3's help: "   --name type, -n type   usage" (three spaces;
// the type is absent for a bool flag; the shorthand, when there is one,
// after a comma). Flags urfave/cli hides (containerd's --run-service) are
// not listed, so the stand-ins refuse them: never kinder than the real
// program.
var urfaveLine = regexp.MustCompile(`^   --([A-Za-z0-9][\w.-]*)(?: ([^\s,]+))?(?:, -([A-Za-z0-9])(?: [^\s]+)?)?(?:\s{2,}|$)`)

// Go's flag.PrintDefaults: "  -name type" then a tab or a new line and the
// usage; no type for a bool flag.
var goflagLine = regexp.MustCompile(`^  -([\w.-]+)(?: ([^\s]+))?(?:\t|$)`)

// kingpin v2's help: "  -h, --[no-]help   usage" or "      --name=VALUE
// usage" (exactly these indentations); "[no-]" marks a bool flag, "=..."
// (its default or placeholder) one that takes a value. Usage continuation
// lines are indented further, to the usage column.
var kingpinLine = regexp.MustCompile(`^(?:  -([A-Za-z0-9]), |      )--(\[no-\])?([A-Za-z0-9][\w.-]*)(=\S*)?(?:\s|$)`)

func main() {
	if len(os.Args) != 2 || !slices.Contains([]string{"pflag", "goflag", "urfave", "kingpin"}, os.Args[1]) {
		fmt.Fprintln(os.Stderr, "usage: flags pflag|goflag|urfave|kingpin < HELP")
		os.Exit(2)
	}
	lines, err := parse(os.Stdin, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "flags:", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// parseLine reads one help line of the style: the flag's shorthand, name
// and type ("" for a bool), and whether the line names a flag at all.
func parseLine(line, style string) (short, name, typ string, ok bool) {
	switch style {
	case "pflag":
		if m := pflagLine.FindStringSubmatch(line); m != nil {
			return m[1], m[2], m[3], true
		}
	case "urfave":
		if m := urfaveLine.FindStringSubmatch(line); m != nil {
			return m[3], m[1], m[2], true
		}
	case "kingpin":
		// A bool has "[no-]" and no "=": its type stays "".
		if m := kingpinLine.FindStringSubmatch(line); m != nil {
			return m[1], m[3], strings.TrimPrefix(m[4], "="), true
		}
	default:
		if m := goflagLine.FindStringSubmatch(line); m != nil {
			return "", m[1], m[2], true
		}
	}
	return "", "", "", false
}

// parse returns the flag lines of a --help text, sorted.
func parse(r io.Reader, style string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		short, name, typ, ok := parseLine(line, style)
		if !ok {
			continue
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		kind := "value"
		switch {
		case typ == "":
			kind = "bool"
		case strings.Contains(typ, "[="):
			// A value that may be left out: pflag shows its
			// NoOptDefVal, "--version version[=true]".
			kind = "optional=" + strings.TrimSuffix(typ[strings.Index(typ, "[=")+2:], "]")
		}
		out = append(out, strings.TrimSpace(name+" "+kind+" "+short))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no flag found in the %s help text", style)
	}
	slices.Sort(out)
	return out, nil
}
