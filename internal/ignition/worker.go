package ignition

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
)

// Where an OpenShift worker Ignition config puts what the kubelet needs.
const (
	KubeconfigPath = "/etc/kubernetes/kubeconfig"
	KubeletCAPath  = "/etc/kubernetes/kubelet-ca.crt"
	KubeletUnit    = "kubelet.service"
)

// Worker is what a Windows kubelet takes from a Linux worker's Ignition.
type Worker struct {
	// BootstrapKubeconfig is the kubeconfig with the bootstrap token the
	// kubelet uses to ask for its client certificate.
	BootstrapKubeconfig []byte
	// KubeletCA is the CA that signs the API server's kubelet client
	// certificate (the kubelet's clientCAFile).
	KubeletCA []byte
	// CloudProvider is the kubelet's --cloud-provider ("" when none).
	CloudProvider string
	// CloudConfigPath is the kubelet's --cloud-config (a Linux path), and
	// CloudConfig its contents when the config carries the file.
	CloudConfigPath string
	CloudConfig     []byte
	// Verbosity is the kubelet's --v (0 when not set).
	Verbosity int
}

// Worker extracts the kubelet's credentials and settings. Secrets in the
// result (the kubeconfig) must not be logged.
func (c *Config) Worker() (*Worker, error) {
	w := &Worker{}
	var err error
	if w.BootstrapKubeconfig, err = c.file(KubeconfigPath); err != nil {
		return nil, err
	}
	if w.KubeletCA, err = c.file(KubeletCAPath); err != nil {
		return nil, err
	}
	k, err := c.Kubelet()
	if err != nil {
		return nil, err
	}
	w.CloudProvider, w.CloudConfigPath, w.CloudConfig, w.Verbosity = k.CloudProvider, k.CloudConfigPath, k.CloudConfig, k.Verbosity
	return w, nil
}

// Kubelet is what a Linux worker's kubelet unit says about the settings a
// Windows kubelet shares with it.
type Kubelet struct {
	// CloudProvider is the kubelet's --cloud-provider ("" when none).
	CloudProvider string
	// CloudConfigPath is the kubelet's --cloud-config (a Linux path), and
	// CloudConfig its contents when the config carries the file.
	CloudConfigPath string
	CloudConfig     []byte
	// Verbosity is the kubelet's --v (0 when not set).
	Verbosity int
	// ConfigPath is the kubelet's --config (a Linux path), and Config its
	// contents (a KubeletConfiguration) when the config carries the file.
	ConfigPath string
	Config     []byte
}

// kubeletFlags are the kubelet flags Kubelet reads.
var kubeletFlags = map[string]bool{"cloud-provider": true, "cloud-config": true, "v": true, "config": true}

// Kubelet reads the kubelet unit's command line (its last ExecStart, with
// drop-ins and environment applied) and the files it names.
func (c *Config) Kubelet() (*Kubelet, error) {
	u, ok := c.Units[KubeletUnit]
	if !ok {
		return nil, fmt.Errorf("ignition spec %s: systemd.units has no %s: not a worker config", c.Version, KubeletUnit)
	}
	args, err := c.execStart(u)
	if err != nil {
		return nil, err
	}
	k := &Kubelet{}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || !kubeletFlags[name] {
			continue
		}
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			value = args[i+1]
			i++
		}
		switch name {
		case "cloud-provider":
			k.CloudProvider = value
		case "cloud-config":
			k.CloudConfigPath = value
		case "config":
			k.ConfigPath = value
		case "v":
			if value == "" {
				// Its variable is set by a file on the host that the
				// config does not carry: the kubelet's default.
				continue
			}
			if k.Verbosity, err = strconv.Atoi(value); err != nil || k.Verbosity < 0 {
				return nil, fmt.Errorf("ignition spec %s: systemd.units %s: ExecStart --v=%q is not a log level", c.Version, KubeletUnit, value)
			}
		}
	}
	if k.CloudConfigPath != "" {
		k.CloudConfig = c.Files[k.CloudConfigPath]
	}
	if k.ConfigPath != "" {
		k.Config = c.Files[k.ConfigPath]
	}
	return k, nil
}

// File is the decoded contents of the file at path, when the config
// carries it with inline (data: URL) contents; remote contents are an
// error, never fetched.
func (c *Config) File(path string) ([]byte, bool, error) {
	if src, ok := c.Remote[path]; ok {
		return nil, false, fmt.Errorf("ignition spec %s: storage.files %s comes from %s: only data: URLs are supported (winnode fetches nothing)", c.Version, path, redactURL(src))
	}
	data, ok := c.Files[path]
	return data, ok, nil
}

func (c *Config) file(path string) ([]byte, error) {
	if src, ok := c.Remote[path]; ok {
		return nil, fmt.Errorf("ignition spec %s: storage.files %s comes from %s: only data: URLs are supported (the agent fetches nothing)", c.Version, path, redactURL(src))
	}
	data, ok := c.Files[path]
	if !ok || len(data) == 0 {
		return nil, fmt.Errorf("ignition spec %s: storage.files has no %s (or it is empty): not a worker config", c.Version, path)
	}
	return data, nil
}

// redactURL keeps the scheme and host of a URL for an error message, never
// a query string that might carry a token.
func redactURL(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i] + "?…"
	}
	return s
}

// execStart returns the kubelet's command line: the unit's last ExecStart
// (drop-ins override the unit, an empty ExecStart= resets), split into
// words, with ${VAR} and $VAR expanded from Environment= and from
// EnvironmentFile= files the config carries.
func (c *Config) execStart(u Unit) ([]string, error) {
	env := map[string]string{}
	var exec string
	sources := []struct{ name, contents string }{{u.Name, u.Contents}}
	for _, d := range u.Dropins {
		sources = append(sources, struct{ name, contents string }{u.Name + ".d/" + d.Name, d.Contents})
	}
	for _, s := range sources {
		opts, err := unit.DeserializeOptions(strings.NewReader(s.contents))
		if err != nil {
			return nil, fmt.Errorf("ignition spec %s: systemd unit %s: %w", c.Version, s.name, err)
		}
		for _, o := range opts {
			if o.Section != "Service" {
				continue
			}
			switch o.Name {
			case "ExecStart":
				exec = o.Value
			case "Environment":
				for _, kv := range splitWords(o.Value) {
					if k, v, ok := strings.Cut(kv, "="); ok {
						env[k] = v
					}
				}
			case "EnvironmentFile":
				data, ok := c.Files[strings.TrimPrefix(o.Value, "-")]
				if !ok {
					continue
				}
				sc := bufio.NewScanner(strings.NewReader(string(data)))
				for sc.Scan() {
					line := strings.TrimSpace(sc.Text())
					if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
						env[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
					}
				}
			}
		}
	}
	if strings.TrimSpace(exec) == "" {
		return nil, fmt.Errorf("ignition spec %s: systemd unit %s has no ExecStart", c.Version, u.Name)
	}
	words := splitWords(exec)
	for i, w := range words {
		words[i] = os.Expand(w, func(k string) string { return env[k] })
	}
	return words, nil
}

// splitWords splits a systemd command line or assignment list on
// whitespace, honouring double and single quotes and backslash escapes.
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
			inWord = true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote = r
			inWord = true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
