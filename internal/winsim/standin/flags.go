package standin

import (
	"bufio"
	"bytes"
	"embed"
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// recordedFlags are the flags each real program accepts, by program: the
// names its --help lists, recorded from the payload's own binaries under
// Wine by hack/payload/build.sh (payload/flags/*.txt) and copied here by
// hack/payload/update-standin-flags.sh. A stand-in accepts exactly these,
// so a command line the real program refuses fails in the simulator too,
// with the real program's words. (--help leaves out deprecated and hidden
// flags, which the real programs still accept with a warning: the stand-ins
// refuse those, stricter than the real programs, never kinder.) A new
// Kubernetes version updates these lists by regeneration, and
// TestRecordedFlagsMatchThePayload fails when they drift from the payload's.
//
//go:embed flags/*.txt
var recordedFlags embed.FS

// flagSpec is one recorded flag: its name, kind (bool: takes no value;
// value; optional=DEFAULT: a value that may be left out) and shorthand.
type flagSpec struct {
	name, kind, short string
}

// recorded returns the recorded flags of a program (kubelet, kube-proxy,
// flanneld).
func recorded(program string) ([]flagSpec, error) {
	data, err := recordedFlags.ReadFile("flags/" + program + ".txt")
	if err != nil {
		return nil, fmt.Errorf("no recorded flags for %s: %w", program, err)
	}
	var specs []flagSpec
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("flags/%s.txt: bad line %q", program, line)
		}
		s := flagSpec{name: f[0], kind: f[1]}
		if len(f) == 3 {
			s.short = f[2]
		}
		specs = append(specs, s)
	}
	return specs, sc.Err()
}

// ignored is the value of a flag the real program accepts and the stand-in
// does not simulate: it takes its value (or none) and does nothing.
type ignored struct {
	value  string
	isBool bool
}

func (v *ignored) String() string     { return v.value }
func (v *ignored) Set(s string) error { v.value = s; return nil }
func (v *ignored) Type() string       { return "string" }
func (v *ignored) IsBoolFlag() bool   { return v.isBool }

// strictPFlags is a flag set that accepts exactly the recorded flags of
// program, parsed as spf13/pflag parses them (the kubelet and kube-proxy):
// own's definition where the stand-in uses a flag, an ignored value for
// the others. --help stays pflag's own. A flag own defines that the real
// program lacks, or defines with another kind, is an error: the stand-in
// would accept what the real program refuses.
func strictPFlags(program string, own *pflag.FlagSet) (*pflag.FlagSet, error) {
	specs, err := recorded(program)
	if err != nil {
		return nil, err
	}
	if err := checkOwn(program, specs, func(visit func(name string, isBool bool)) {
		own.VisitAll(func(f *pflag.Flag) { visit(f.Name, f.NoOptDefVal == "true" && f.Value.Type() == "bool") })
	}); err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet(program, pflag.ContinueOnError)
	fs.SetOutput(own.Output())
	fs.SetNormalizeFunc(own.GetNormalizeFunc())
	for _, s := range specs {
		if s.name == "help" {
			continue
		}
		if f := own.Lookup(s.name); f != nil {
			fs.AddFlag(f)
			continue
		}
		f := fs.VarPF(&ignored{isBool: s.kind == "bool"}, s.name, s.short, "accepted by the real program; not simulated")
		switch {
		case s.kind == "bool":
			f.NoOptDefVal = "true"
		case strings.HasPrefix(s.kind, "optional="):
			f.NoOptDefVal = strings.TrimPrefix(s.kind, "optional=")
		}
	}
	return fs, nil
}

// strictGoFlags is strictPFlags for a program that parses its flags with
// Go's flag package (flanneld).
func strictGoFlags(program string, own *flag.FlagSet) (*flag.FlagSet, error) {
	return strictGoFlagsWith(program, own, nil)
}

// strictGoFlagsWith is strictGoFlags for a program that also accepts
// hidden flags, which its --help (and so the recorded list) leaves out,
// and whose shorthands (urfave/cli's -c for --config) are names of their
// own in Go's flag package: containerd.
func strictGoFlagsWith(program string, own *flag.FlagSet, hidden []flagSpec) (*flag.FlagSet, error) {
	specs, err := recorded(program)
	if err != nil {
		return nil, err
	}
	specs = append(specs, hidden...)
	if err := checkOwn(program, specs, func(visit func(name string, isBool bool)) {
		own.VisitAll(func(f *flag.Flag) {
			b, ok := f.Value.(interface{ IsBoolFlag() bool })
			visit(f.Name, ok && b.IsBoolFlag())
		})
	}); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	fs.SetOutput(own.Output())
	for _, s := range specs {
		var v flag.Value = &ignored{isBool: s.kind == "bool"}
		usage := "accepted by the real program; not simulated"
		if f := own.Lookup(s.name); f != nil {
			v, usage = f.Value, f.Usage
		}
		fs.Var(v, s.name, usage)
		if s.short != "" {
			fs.Var(v, s.short, usage)
		}
	}
	return fs, nil
}

// checkOwn refuses a stand-in's own flag that the real program lacks or
// takes otherwise (a value where it takes none, or the reverse).
func checkOwn(program string, specs []flagSpec, each func(visit func(name string, isBool bool))) error {
	kinds := map[string]string{}
	for _, s := range specs {
		kinds[s.name] = s.kind
	}
	var bad []string
	each(func(name string, isBool bool) {
		kind, ok := kinds[name]
		switch {
		case !ok:
			bad = append(bad, "--"+name+" (the real "+program+" has no such flag)")
		case isBool != (kind == "bool"):
			bad = append(bad, "--"+name+" (the real "+program+"'s is "+kind+")")
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("simulated %s: flags unlike the real program's: %s", program, strings.Join(bad, ", "))
	}
	return nil
}
