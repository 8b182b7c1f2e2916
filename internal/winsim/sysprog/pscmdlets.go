package sysprog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winpath"
)

// ErrNoProgram is what Env.Exec returns when no program of that name
// exists on the host.
var ErrNoProgram = errors.New("no such program")

// cmdlet runs with its bound parameters and the pipeline's input; it
// writes its error records to errs and reports false when it failed.
type cmdlet struct {
	name   string // as PowerShell names it, for error records
	params []paramSpec
	run    func(e *Env, c *psCommand, p bound, in []any, errs *strings.Builder) ([]any, bool)
}

// paramSpec is a parameter: its name and aliases, whether it is a switch,
// and its position (-1: named only).
type paramSpec struct {
	names    []string
	isSwitch bool
	position int
}

// bound is parameters by their first name.
type bound map[string][]string

var cmdlets = map[string]*cmdlet{}

func init() {
	for _, c := range []*cmdlet{
		{"Get-Service", []paramSpec{{names: []string{"Name", "ServiceName"}, position: 0}}, getService},
		{"Get-Content", []paramSpec{{names: []string{"Path", "PSPath"}, position: 0}, {names: []string{"Tail", "Last"}, position: -1},
			{names: []string{"TotalCount", "Head", "First"}, position: -1}}, getContent},
		{"Get-HnsNetwork", nil, getHnsNetwork},
		{"Select-Object", []paramSpec{{names: []string{"Property"}, position: 0}, {names: []string{"First"}, position: -1}, {names: []string{"Last"}, position: -1}}, selectObject},
		{"Select-String", []paramSpec{{names: []string{"Pattern"}, position: 0}, {names: []string{"SimpleMatch"}, isSwitch: true, position: -1},
			{names: []string{"CaseSensitive"}, isSwitch: true, position: -1}}, selectString},
	} {
		cmdlets[strings.ToLower(c.name)] = c
	}
	// Windows PowerShell's built-in aliases of these.
	for alias, name := range map[string]string{"gsv": "get-service", "gc": "get-content", "cat": "get-content", "type": "get-content", "select": "select-object", "sls": "select-string"} {
		cmdlets[alias] = cmdlets[name]
	}
}

// psVerb matches what may be a cmdlet's name (an approved verb, a dash, a
// noun), which gets a word on the cmdlets the stand-in has.
var psVerb = regexp.MustCompile(`(?i)^(Add|Clear|Compare|Convert|ConvertFrom|ConvertTo|Copy|Disable|Enable|Enter|Exit|Export|Find|ForEach|Format|Get|Group|Import|Install|Invoke|Join|Measure|Move|New|Out|Read|Register|Remove|Rename|Resolve|Restart|Resume|Select|Set|Sort|Split|Start|Stop|Suspend|Tee|Test|Uninstall|Unregister|Update|Wait|Where|Write)-[A-Za-z]+$`)

// runCommand runs one command of a pipeline: a cmdlet, or a program of the
// host.
func runCommand(e *Env, c *psCommand, in []any, first bool, errs *strings.Builder) ([]any, bool) {
	if cl, ok := cmdlets[strings.ToLower(c.name)]; ok {
		p, err := bind(cl, c)
		if err != nil {
			psError(errs, c, err.Error(), fmt.Sprintf("InvalidArgument: (:) [%s], ParameterBindingException", cl.name),
				"NamedParameterNotFound,Microsoft.PowerShell.Commands."+strings.ReplaceAll(cl.name, "-", "")+"Command")
			return nil, false
		}
		return cl.run(e, c, p, in, errs)
	}
	var stdout bytes.Buffer
	args := []string{c.name}
	for _, a := range c.args {
		if a.param != "" {
			args = append(args, "-"+a.param)
		}
		args = append(args, a.values...)
	}
	code, err := e.Exec(args, &stdout, e.Stderr)
	switch {
	case errors.Is(err, ErrNoProgram):
		msg := fmt.Sprintf("The term '%s' is not recognized as the name of a cmdlet, function, script file, or operable program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.", c.name)
		if psVerb.MatchString(c.name) {
			// Maybe a real cmdlet: say what this PowerShell has.
			msg += " (This simulated host's PowerShell, winsim's, has only the cmdlets Get-Service, Get-Content, Get-HnsNetwork, Select-Object and Select-String.)"
		}
		psError(errs, c, msg, fmt.Sprintf("ObjectNotFound: (%s:String) [], CommandNotFoundException", c.name), "CommandNotFoundException")
		return nil, false
	case err != nil:
		psError(errs, c, err.Error(), fmt.Sprintf("NotSpecified: (:) [%s], Win32Exception", c.name), "NativeCommandFailed")
		return nil, false
	}
	return textLines(stdout.String()), code == 0
}

// textLines are a program's output lines, as PowerShell reads them.
func textLines(s string) []any {
	s = strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if s == "" {
		return nil
	}
	var out []any
	for _, l := range strings.Split(s, "\n") {
		out = append(out, l)
	}
	return out
}

// bind matches a command's arguments to the cmdlet's parameters: by name
// (any unambiguous prefix of a name or alias, case-insensitive), else by
// position.
func bind(cl *cmdlet, c *psCommand) (bound, error) {
	p := bound{}
	pos := 0
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.param == "" {
			spec := specAt(cl.params, pos)
			if spec == nil {
				return nil, psTextf("A positional parameter cannot be found that accepts argument '%s'.", strings.Join(a.values, ","))
			}
			p[spec.names[0]] = append(p[spec.names[0]], a.values...)
			pos++
			continue
		}
		spec := specNamed(cl.params, a.param)
		if spec == nil {
			return nil, psTextf("A parameter cannot be found that matches parameter name '%s'.", a.param)
		}
		if spec.isSwitch {
			p[spec.names[0]] = []string{"true"}
			continue
		}
		if i+1 >= len(c.args) || c.args[i+1].param != "" {
			return nil, psTextf("Missing an argument for parameter '%s'. Specify a parameter of type 'System.String' and try again.", spec.names[0])
		}
		i++
		p[spec.names[0]] = append(p[spec.names[0]], c.args[i].values...)
	}
	return p, nil
}

func specAt(specs []paramSpec, pos int) *paramSpec {
	for i := range specs {
		if specs[i].position == pos {
			return &specs[i]
		}
	}
	return nil
}

func specNamed(specs []paramSpec, name string) *paramSpec {
	var found *paramSpec
	for i := range specs {
		for _, n := range specs[i].names {
			if strings.EqualFold(n, name) {
				return &specs[i]
			}
			if len(name) <= len(n) && strings.EqualFold(n[:len(name)], name) {
				if found != nil && found != &specs[i] {
					return nil // ambiguous
				}
				found = &specs[i]
			}
		}
	}
	return found
}

// getService copies Get-Service: the named services (wildcards * ? [ ]
// allowed), every service without a name; a name that is no service (and
// no wildcard) is an error, the others are still shown.
func getService(e *Env, c *psCommand, p bound, _ []any, errs *strings.Builder) ([]any, bool) {
	all := e.Services.List()
	names := p["Name"]
	if len(names) == 0 {
		names = []string{"*"}
	}
	var out []any
	ok := true
	for _, n := range names {
		found := false
		for _, st := range all {
			if m, _ := path.Match(strings.ToLower(n), strings.ToLower(st.Name)); !m {
				continue
			}
			found = true
			s, err := e.Services.Get(st.Name)
			if err != nil {
				continue // deleted meanwhile
			}
			out = append(out, serviceObject(s))
		}
		if !found && !strings.ContainsAny(n, "*?[") {
			psError(errs, c, fmt.Sprintf("Cannot find any service with service name '%s'.", n),
				fmt.Sprintf("ObjectNotFound: (%s:String) [Get-Service], ServiceCommandException", n),
				"NoServiceFoundForGivenName,Microsoft.PowerShell.Commands.GetServiceCommand")
			ok = false
		}
	}
	return out, ok
}

func serviceObject(s simscm.Service) *psObject {
	start := map[string]string{"auto": "Automatic", "manual": "Manual", "disabled": "Disabled"}[string(s.Config.StartType)]
	return &psObject{kind: psService, props: []psProp{
		{"Status", string(s.Status.State)},
		{"Name", s.Config.Name},
		{"DisplayName", displayName(s.Config)},
		{"StartType", start},
	}}
}

// getContent copies Get-Content: a file's lines; -Tail N the last N,
// -TotalCount N the first N. A file that does not exist is an error
// naming it.
func getContent(e *Env, c *psCommand, p bound, _ []any, errs *strings.Builder) ([]any, bool) {
	var out []any
	ok := true
	for _, name := range p["Path"] {
		wp, err := winpath.Parse(name)
		if err != nil {
			wp = e.Cwd.Join(name)
		}
		local, err := winpath.Resolve(e.Root, wp)
		var data []byte
		if err == nil {
			data, err = os.ReadFile(local)
		}
		if err != nil {
			psError(errs, c, fmt.Sprintf("Cannot find path '%s' because it does not exist.", wp),
				fmt.Sprintf("ObjectNotFound: (%s:String) [Get-Content], ItemNotFoundException", wp),
				"PathNotFound,Microsoft.PowerShell.Commands.GetContentCommand")
			ok = false
			continue
		}
		lines := textLines(string(data))
		if n, set, err := intParam(p, "TotalCount"); err == nil && set && n < len(lines) {
			lines = lines[:max(n, 0)]
		}
		if n, set, err := intParam(p, "Tail"); err == nil && set && n < len(lines) {
			lines = lines[len(lines)-max(n, 0):]
		}
		out = append(out, lines...)
	}
	return out, ok
}

func intParam(p bound, name string) (int, bool, error) {
	v, ok := p[name]
	if !ok || len(v) == 0 {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v[0])
	return n, true, err
}

// getHnsNetwork copies Get-HnsNetwork (the HostNetworkingService module):
// one object per HNS network, with the properties the simulated HNS
// keeps (ID, Name, Type, Subnets of AddressPrefix and GatewayAddress).
func getHnsNetwork(e *Env, c *psCommand, _ bound, _ []any, errs *strings.Builder) ([]any, bool) {
	if e.HNS == nil {
		return nil, true
	}
	nets, err := e.HNS.Networks()
	if err != nil {
		psError(errs, c, err.Error(), "NotSpecified: (:) [Get-HnsNetwork], Exception", "HnsError")
		return nil, false
	}
	var out []any
	for _, n := range nets {
		var subnets []any
		for _, s := range n.Subnets {
			subnets = append(subnets, &psObject{props: []psProp{{"AddressPrefix", s.AddressPrefix}, {"GatewayAddress", s.GatewayAddress}}})
		}
		out = append(out, &psObject{props: []psProp{{"ID", n.ID}, {"Name", n.Name}, {"Type", n.Type}, {"Subnets", subnets}}})
	}
	return out, true
}

// selectObject copies Select-Object -Property (names, no wildcards or
// calculated properties), -First and -Last.
func selectObject(_ *Env, _ *psCommand, p bound, in []any, _ *strings.Builder) ([]any, bool) {
	if n, set, err := intParam(p, "First"); err == nil && set && n < len(in) {
		in = in[:max(n, 0)]
	}
	if n, set, err := intParam(p, "Last"); err == nil && set && n < len(in) {
		in = in[len(in)-max(n, 0):]
	}
	props := p["Property"]
	if len(props) == 0 {
		return in, true
	}
	out := make([]any, 0, len(in))
	for _, v := range in {
		o := &psObject{}
		src, _ := v.(*psObject)
		for _, name := range props {
			var val any
			if src != nil {
				if got, ok := src.get(name); ok {
					val = got
				}
			}
			o.props = append(o.props, psProp{name, val})
		}
		out = append(out, o)
	}
	return out, true
}

// selectString copies Select-String on piped input: the lines that match
// the pattern (a regular expression, case-insensitive unless
// -CaseSensitive; -SimpleMatch: a plain string).
func selectString(_ *Env, c *psCommand, p bound, in []any, errs *strings.Builder) ([]any, bool) {
	pattern := strings.Join(p["Pattern"], "")
	if _, simple := p["SimpleMatch"]; simple {
		pattern = regexp.QuoteMeta(pattern)
	}
	if _, cs := p["CaseSensitive"]; !cs {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		psError(errs, c, fmt.Sprintf("The string %s is not a valid regular expression: %v", p["Pattern"], err),
			"InvalidArgument: (:) [Select-String], ArgumentException", "InvalidRegex,Microsoft.PowerShell.Commands.SelectStringCommand")
		return nil, false
	}
	var out []any
	for _, v := range in {
		if line := psString(v); re.MatchString(line) {
			out = append(out, &psObject{kind: psMatch, line: line})
		}
	}
	return out, true
}
