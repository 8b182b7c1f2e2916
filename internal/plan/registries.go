package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Registries: containerd reads one hosts.toml per registry host, from a
// folder of its registry config_path (RegistryDir), at every pull, so a
// change needs no restart (containerd's docs/hosts.md). winnode renders
// them from RegistryHosts, which internal/registries makes from OpenShift's
// ImageDigestMirrorSets and ImageTagMirrorSets or from the windows-registries
// ConfigMap.

// DefaultRegistry is the folder containerd reads for a registry without
// its own: its hosts.toml applies to every other registry.
const DefaultRegistry = "_default"

// RegistryHosts is one registry's configuration: what containerd tries, in
// order, to pull an image whose reference names Host.
type RegistryHosts struct {
	// Host is the registry host as image references name it ("quay.io",
	// "myreg:5000"), or DefaultRegistry.
	Host string
	// Server is the registry itself, tried last; its URL "" is containerd's
	// default for Host (https://Host; registry-1.docker.io for docker.io).
	Server RegistryHost
	// Mirrors are tried first, in this order.
	Mirrors []RegistryHost
}

// RegistryHost is one endpoint of a registry: the `server` of hosts.toml,
// or one of its [host."URL"] tables.
type RegistryHost struct {
	// URL is the endpoint: scheme, host and an optional path (a mirror's
	// organisation, "https://mirror.example.com/org"); the repository's path
	// is appended to it, after /v2 unless OverridePath.
	URL string
	// Capabilities are what containerd may do there: pull (by digest),
	// resolve (a tag to a digest), push. Empty: all of them.
	Capabilities []string
	// CA is the PEM of the CAs that sign its TLS certificate, beside
	// Windows' own: written beside hosts.toml and named in `ca`.
	CA []byte
	// SkipVerify turns TLS verification off (hosts.toml skip_verify).
	SkipVerify bool
	// OverridePath says URL's path is the API root (no /v2 appended).
	OverridePath bool
	// Header is sent with every request to it; an `authorization` header
	// carries the registry's credentials, so hosts.toml is a secret
	// (winnode's folders are readable by SYSTEM and Administrators only).
	Header map[string][]string
	// DialTimeout bounds connecting to it ("30s"; "": containerd's own).
	DialTimeout string
}

// registryCapabilities are the capabilities containerd knows
// (core/remotes/docker/config hosts.go; any other refuses the file).
var registryCapabilities = []string{"pull", "resolve", "push", "referrers"}

// hostPort is a registry host with a port, "myreg:5000".
var hostPort = regexp.MustCompile(`^(.+):([0-9]{1,5})$`)

// HostFolder is the folder containerd on Windows reads a registry host's
// hosts.toml from: the host, with a port written "_port_" instead of
// ":port" (a colon cannot be in a Windows file name):
// core/remotes/docker/config hosts.go hostDirectory and config_windows.go,
// which look in <config_path>\myreg_5000_ first (then myreg5000, then
// _default). The same name is a valid ConfigMap key, which is why the
// windows-registries ConfigMap uses it.
func HostFolder(host string) string {
	if m := hostPort.FindStringSubmatch(host); m != nil {
		return m[1] + "_" + m[2] + "_"
	}
	return host
}

// HostOfFolder is the registry host a HostFolder name stands for.
func HostOfFolder(folder string) string {
	if strings.HasSuffix(folder, "_") {
		if i := strings.LastIndex(folder[:len(folder)-1], "_"); i > 0 {
			port := folder[i+1 : len(folder)-1]
			if port != "" && strings.Trim(port, "0123456789") == "" && len(port) <= 5 {
				return folder[:i] + ":" + port
			}
		}
	}
	return folder
}

// folder is the registry's folder on the host.
func (r RegistryHosts) folder() string { return RegistryDir + `\` + HostFolder(r.Host) }

// hostsTOMLPath is where its hosts.toml goes.
func (r RegistryHosts) hostsTOMLPath() string { return r.folder() + `\hosts.toml` }

// caPath is where an endpoint's CA file goes: named by its content, so
// that equal CAs share one file.
func (r RegistryHosts) caPath(ca []byte) string {
	sum := sha256.Sum256(ca)
	return r.folder() + `\ca-` + hex.EncodeToString(sum[:])[:12] + ".crt"
}

// validRegistryHost: a DNS name or IPv4 address, with an optional port.
var validRegistryHost = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$`)

// check refuses a configuration containerd would not read as meant.
func (r RegistryHosts) check() error {
	if r.Host != DefaultRegistry && !validRegistryHost.MatchString(r.Host) {
		return fmt.Errorf("registry %q: not a registry host (a DNS name or address, with an optional :port)", r.Host)
	}
	if err := r.Server.check(r.Server.URL == ""); err != nil {
		return fmt.Errorf("registry %s: server: %w", r.Host, err)
	}
	seen := map[string]bool{}
	for i, m := range r.Mirrors {
		if m.URL == "" {
			return fmt.Errorf("registry %s: mirror %d has no URL", r.Host, i+1)
		}
		if err := m.check(false); err != nil {
			return fmt.Errorf("registry %s: mirror %s: %w", r.Host, m.URL, err)
		}
		if seen[m.URL] {
			return fmt.Errorf("registry %s: mirror %s is listed twice", r.Host, m.URL)
		}
		seen[m.URL] = true
	}
	return nil
}

// check refuses an endpoint containerd cannot use; defaultURL: its URL is
// containerd's default (the registry's own server).
func (h RegistryHost) check(defaultURL bool) error {
	if !defaultURL {
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("%q is not an http or https URL of a registry (scheme, host, optional path)", h.URL)
		}
	}
	for _, c := range h.Capabilities {
		if !slices.Contains(registryCapabilities, c) {
			return fmt.Errorf("capability %q: containerd knows %s", c, strings.Join(registryCapabilities, ", "))
		}
	}
	for k, vs := range h.Header {
		if k == "" || strings.ContainsAny(k, " :\r\n\x00") {
			return fmt.Errorf("header name %q is not a header name", k)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				return fmt.Errorf("header %s: a value spans lines", k)
			}
		}
	}
	return nil
}

// files are the registry's hosts.toml and the CA files it names.
func (r RegistryHosts) files() []GeneratedFile {
	out := []GeneratedFile{{HostPath: r.hostsTOMLPath(), Content: r.hostsTOML()}}
	seen := map[string]bool{}
	for _, h := range append([]RegistryHost{r.Server}, r.Mirrors...) {
		if len(h.CA) == 0 {
			continue
		}
		if p := r.caPath(h.CA); !seen[p] {
			seen[p] = true
			out = append(out, GeneratedFile{HostPath: p, Content: h.CA})
		}
	}
	return out
}

// hostsTOML renders the registry's hosts.toml: the server's settings at
// the top, then one [host."URL"] table per mirror, in order (containerd
// keeps the tables' order: hosts.go getSortedHosts).
func (r RegistryHosts) hostsTOML() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# hosts.toml of registry %s, written by winnode: the next apply overwrites changes.\n", r.Host)
	if r.Server.URL != "" {
		fmt.Fprintf(&b, "server = %s\n", tomlString(r.Server.URL))
	}
	r.writeSettings(&b, r.Server, "")
	for _, m := range r.Mirrors {
		table := "host." + tomlString(m.URL)
		fmt.Fprintf(&b, "\n[%s]\n", table)
		r.writeSettings(&b, m, table)
	}
	return b.Bytes()
}

// writeSettings writes an endpoint's keys, and its header table.
func (r RegistryHosts) writeSettings(b *bytes.Buffer, h RegistryHost, table string) {
	indent := ""
	if table != "" {
		indent = "  "
	}
	if len(h.Capabilities) > 0 {
		quoted := make([]string, len(h.Capabilities))
		for i, c := range h.Capabilities {
			quoted[i] = tomlString(c)
		}
		fmt.Fprintf(b, "%scapabilities = [%s]\n", indent, strings.Join(quoted, ", "))
	}
	if len(h.CA) > 0 {
		fmt.Fprintf(b, "%sca = %s\n", indent, tomlString(r.caPath(h.CA)))
	}
	if h.SkipVerify {
		fmt.Fprintf(b, "%sskip_verify = true\n", indent)
	}
	if h.OverridePath {
		fmt.Fprintf(b, "%soverride_path = true\n", indent)
	}
	if h.DialTimeout != "" {
		fmt.Fprintf(b, "%sdial_timeout = %s\n", indent, tomlString(h.DialTimeout))
	}
	if len(h.Header) == 0 {
		return
	}
	headerTable := "header"
	if table != "" {
		headerTable = table + ".header"
	}
	fmt.Fprintf(b, "\n%s[%s]\n", indent, headerTable)
	keys := make([]string, 0, len(h.Header))
	for k := range h.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		quoted := make([]string, len(h.Header[k]))
		for i, v := range h.Header[k] {
			quoted[i] = tomlString(v)
		}
		fmt.Fprintf(b, "%s  %s = [%s]\n", indent, tomlString(k), strings.Join(quoted, ", "))
	}
}

// CheckRegistry checks one registry's configuration as Render does.
func CheckRegistry(r RegistryHosts) error { return r.check() }

// RegistryFiles are the files a plan writes for one registry: its
// hosts.toml and the CA files it names.
func RegistryFiles(r RegistryHosts) []GeneratedFile { return r.files() }
