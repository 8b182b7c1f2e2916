// Package registries makes containerd's registry configuration
// (plan.RegistryHosts: one hosts.toml per registry host) from what a
// cluster says about its registries: on OpenShift, ImageDigestMirrorSets
// and ImageTagMirrorSets with the cluster pull secret's credentials
// (mirrorsets.go); on Kubernetes, the windows-registries ConfigMap, one
// hosts.toml per registry, with the credentials of a Secret it names
// (configmap.go). It also reads a hosts.toml as containerd does, for the
// simulator's containerd (Lenient).
package registries

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/winnode/winnode/internal/plan"
)

// maxHostsTOML bounds what is parsed: a hosts.toml lists a few endpoints.
const maxHostsTOML = 64 << 10

// endpoint is one endpoint's keys in hosts.toml, as containerd v2.4 reads
// them (core/remotes/docker/config hosts.go, hostFileConfig).
type endpoint struct {
	Capabilities []string       `toml:"capabilities"`
	CA           any            `toml:"ca"`
	Client       any            `toml:"client"`
	SkipVerify   *bool          `toml:"skip_verify"`
	Header       map[string]any `toml:"header"`
	OverridePath bool           `toml:"override_path"`
	DialTimeout  string         `toml:"dial_timeout"`
}

// hostsFile is a whole hosts.toml: the server's keys at the top, and one
// [host."URL"] table per mirror.
type hostsFile struct {
	endpoint
	Server string              `toml:"server"`
	Hosts  map[string]endpoint `toml:"host"`
}

// Parse reads a hosts.toml given for registry host (as a ConfigMap key
// holds it) strictly: what containerd would ignore or refuse (an unknown
// key, a capability it does not know, a mistyped value) is an error naming
// it, since containerd itself would only log it and pull without the
// configuration. ca names CA files given beside it: caFiles maps each name
// to its PEM. Client certificates are refused: their keys would need a
// Secret of their own.
func Parse(host string, data []byte, caFiles map[string][]byte) (plan.RegistryHosts, error) {
	if len(data) > maxHostsTOML {
		return plan.RegistryHosts{}, fmt.Errorf("hosts.toml of %s: %d bytes, more than %d", host, len(data), maxHostsTOML)
	}
	var f hostsFile
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return plan.RegistryHosts{}, fmt.Errorf("hosts.toml of %s: %s", host, describeTOMLError(err))
	}
	order, err := hostOrder(data)
	if err != nil {
		return plan.RegistryHosts{}, fmt.Errorf("hosts.toml of %s: %v", host, err)
	}
	r := plan.RegistryHosts{Host: host}
	var errs []error
	for _, u := range append([]string{f.Server}, order...) {
		if strings.Contains(u, "://") && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("%q is not an http or https URL of a registry", u))
		}
	}
	if r.Server, err = f.endpoint.convert(f.Server, caFiles); err != nil {
		errs = append(errs, fmt.Errorf("server: %w", err))
	}
	if f.Server != "" {
		r.Server.URL = withScheme(f.Server)
	}
	for _, u := range order {
		e, err := f.Hosts[u].convert(u, caFiles)
		if err != nil {
			errs = append(errs, fmt.Errorf("host %q: %w", u, err))
			continue
		}
		e.URL = withScheme(u)
		r.Mirrors = append(r.Mirrors, e)
	}
	if err := errors.Join(errs...); err != nil {
		return plan.RegistryHosts{}, fmt.Errorf("hosts.toml of %s: %w", host, err)
	}
	if err := checkRegistry(r); err != nil {
		return plan.RegistryHosts{}, err
	}
	return r, nil
}

// convert checks one endpoint's keys and makes the plan's form of it.
func (e endpoint) convert(name string, caFiles map[string][]byte) (plan.RegistryHost, error) {
	out := plan.RegistryHost{Capabilities: e.Capabilities, OverridePath: e.OverridePath, DialTimeout: e.DialTimeout}
	if e.SkipVerify != nil {
		out.SkipVerify = *e.SkipVerify
	}
	if e.Client != nil {
		return out, errors.New("client certificates (client) are not supported")
	}
	if e.DialTimeout != "" {
		if _, err := time.ParseDuration(e.DialTimeout); err != nil {
			return out, fmt.Errorf("dial_timeout %q is not a duration", e.DialTimeout)
		}
	}
	ca, err := caOf(e.CA, caFiles)
	if err != nil {
		return out, err
	}
	out.CA = ca
	if len(e.Header) > 0 {
		out.Header = map[string][]string{}
		for k, v := range e.Header {
			vs, err := stringList(v)
			if err != nil {
				return out, fmt.Errorf("header %q: %w", k, err)
			}
			out.Header[k] = vs
		}
	}
	return out, nil
}

// caOf is the PEM of the CA files ca names (a name or a list of names).
func caOf(ca any, files map[string][]byte) ([]byte, error) {
	if ca == nil {
		return nil, nil
	}
	names, err := stringList(ca)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	var out []byte
	for _, n := range names {
		pem, ok := files[n]
		if !ok {
			return nil, fmt.Errorf("ca %q: no such CA file given beside it (a key of the same ConfigMap, ending in .crt or .pem)", n)
		}
		out = append(out, pem...)
		if len(pem) > 0 && pem[len(pem)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out, nil
}

// stringList reads a TOML value that is a string or a list of strings.
func stringList(v any) ([]string, error) {
	switch t := v.(type) {
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%v is not a string", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%v is neither a string nor a list of strings", v)
}

// withScheme is containerd's reading of a server or host URL: https when
// none is given (hosts.go parseHostConfig).
func withScheme(u string) string {
	if !strings.HasPrefix(u, "http") {
		return "https://" + u
	}
	return u
}

// hostOrder returns the [host."URL"] tables in the order of the file:
// containerd tries mirrors in that order (hosts.go getSortedHosts reads
// the file's expressions with go-toml's unstable parser, as here).
func hostOrder(data []byte) ([]string, error) {
	var order []string
	p := unstable.Parser{}
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.Table {
			continue
		}
		var parts []string
		for it := e.Key(); it.Next(); {
			parts = append(parts, string(it.Node().Data))
		}
		if len(parts) >= 2 && parts[0] == "host" && !slices.Contains(order, parts[1]) {
			order = append(order, parts[1])
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return order, nil
}

// describeTOMLError says where a TOML error is, and which keys are
// unknown.
func describeTOMLError(err error) string {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var keys []string
		for _, e := range strict.Errors {
			keys = append(keys, strings.Join(e.Key(), "."))
		}
		return "unknown keys (containerd would ignore them): " + strings.Join(keys, ", ")
	}
	var derr *toml.DecodeError
	if errors.As(err, &derr) {
		row, col := derr.Position()
		return fmt.Sprintf("row %d column %d: %v", row, col, derr)
	}
	return err.Error()
}

// checkRegistry checks what the plan checks, so that a bad entry is
// refused by its key rather than failing every host's plan.
func checkRegistry(r plan.RegistryHosts) error {
	for _, h := range append([]plan.RegistryHost{r.Server}, r.Mirrors...) {
		if h.URL == "" {
			continue
		}
		if u, err := url.Parse(h.URL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("hosts.toml of %s: %q is not an http or https URL of a registry", r.Host, h.URL)
		}
	}
	return plan.CheckRegistry(r)
}

// Lenient reads a hosts.toml as containerd does when it pulls: unknown
// keys are ignored, and a file that does not decode is an error the caller
// answers as containerd does (it logs "failed to decode hosts.toml" and
// uses the registry's default). CA and client files are names on the host,
// not read here.
func Lenient(host string, data []byte) (plan.RegistryHosts, error) {
	var f hostsFile
	if err := toml.Unmarshal(data, &f); err != nil {
		return plan.RegistryHosts{}, err
	}
	order, err := hostOrder(data)
	if err != nil {
		return plan.RegistryHosts{}, err
	}
	r := plan.RegistryHosts{Host: host}
	lenient := func(e endpoint, u string) plan.RegistryHost {
		h := plan.RegistryHost{Capabilities: e.Capabilities, OverridePath: e.OverridePath}
		if u != "" {
			h.URL = withScheme(u)
		}
		for k, v := range e.Header {
			if vs, err := stringList(v); err == nil {
				if h.Header == nil {
					h.Header = map[string][]string{}
				}
				h.Header[k] = vs
			}
		}
		return h
	}
	r.Server = lenient(f.endpoint, f.Server)
	for _, u := range order {
		r.Mirrors = append(r.Mirrors, lenient(f.Hosts[u], u))
	}
	return r, nil
}
