package standin

import (
	"fmt"
	"strings"
)

// kingpinFlags parses a command line as github.com/alecthomas/kingpin/v2
// (v2.4.0, flags.go) does, against a program's recorded flags: --name=VALUE
// or --name VALUE for a flag that takes a value, --name or --no-name for a
// bool, -h for help. Its errors are kingpin's: "unknown long flag
// '--name'", "expected argument for flag '--name'". (A short flag other
// than -h, and flags after a bare "--", are not simulated: windows_exporter
// has no other short flag and no positional argument.) Own code rather than
// kingpin itself: the main module does not link it, and the stand-in must
// accept exactly the recorded list, which kingpin cannot be given.
type kingpinFlags struct {
	program string
	kinds   map[string]string
	// values of the flags given, the last of each; multi of a repeated one
	// (--web.listen-address), in order.
	values map[string]string
	multi  map[string][]string
}

func newKingpinFlags(program string) (*kingpinFlags, error) {
	specs, err := recorded(program)
	if err != nil {
		return nil, err
	}
	k := &kingpinFlags{program: program, kinds: map[string]string{}, values: map[string]string{}, multi: map[string][]string{}}
	for _, s := range specs {
		k.kinds[s.name] = s.kind
		if s.short != "" {
			k.kinds["-"+s.short] = s.kind
		}
	}
	return k, nil
}

// parse reads args; the error is kingpin's message (the caller adds
// kingpin.MustParse's ", try --help").
func (k *kingpinFlags) parse(args []string) error {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "-h" {
			k.values["help"] = "true"
			continue
		}
		if !strings.HasPrefix(arg, "--") || arg == "--" {
			return fmt.Errorf("unexpected %s", arg)
		}
		name, value, hasValue := strings.Cut(arg[2:], "=")
		kind, ok := k.kinds[name]
		invert := false
		if !ok && strings.HasPrefix(name, "no-") {
			kind, ok = k.kinds[name[3:]]
			invert = ok && kind == "bool"
			name = name[3:]
			if ok && !invert {
				return fmt.Errorf("unknown long flag '%s'", "--no-"+name)
			}
		}
		if !ok {
			return fmt.Errorf("unknown long flag '--%s'", name)
		}
		switch {
		case kind == "bool" && !hasValue:
			value = fmt.Sprint(!invert)
		case !hasValue:
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return fmt.Errorf("expected argument for flag '--%s'", name)
			}
			i++
			value = args[i]
		}
		k.values[name] = value
		k.multi[name] = append(k.multi[name], value)
	}
	return nil
}

// get is a flag's value, or def when it was not given.
func (k *kingpinFlags) get(name, def string) string {
	if v, ok := k.values[name]; ok {
		return v
	}
	return def
}
