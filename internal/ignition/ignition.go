// Package ignition reads an OpenShift worker Ignition config (spec 2.2–2.4
// and 3.0–3.5) far enough to join a Windows host with the same credentials
// a Linux worker would use: the files it writes (their contents decoded from
// data: URLs, base64 and gzip) and its systemd units. Worker extracts the
// kubelet's bootstrap kubeconfig, CA, cloud provider, cloud config and log
// verbosity from those.
//
// Spec 3.x is parsed with the Ignition project's own config packages
// (github.com/coreos/ignition/v2/config/v3_5, which also translates 3.0–3.4).
// Spec 2.x is parsed by the small decoder in v2.go, because the Ignition
// module that has the 2.x packages (github.com/coreos/ignition v0.35) needs
// github.com/ajeddeloh/go-json, which the Go module proxy no longer serves,
// plus old go-systemd and go4.org modules; only five fields are needed.
package ignition

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Config is the part of an Ignition config the agent uses.
type Config struct {
	// Version is the spec version, "2.2.0" or "3.5.0".
	Version string
	// Files maps each file's absolute path to its decoded contents (files
	// whose contents come from a URL that is not a data: URL are listed in
	// Remote instead).
	Files map[string][]byte
	// Remote maps paths of files whose contents would be fetched from the
	// network (http, s3, ...) to their source; the agent never fetches.
	Remote map[string]string
	// Units are the systemd units, with their drop-ins.
	Units map[string]Unit
}

// Unit is a systemd unit and its drop-ins, in the config's order.
type Unit struct {
	Name     string
	Contents string
	Dropins  []Dropin
}

// Dropin is one drop-in file of a unit.
type Dropin struct {
	Name     string
	Contents string
}

// Supported lists the spec versions Parse reads.
var Supported = []string{"2.2.0", "2.3.0", "2.4.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"}

// Parse reads an Ignition config of any supported spec version. Errors name
// the spec version, and the field when one is at fault.
func Parse(data []byte) (*Config, error) {
	var head struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("ignition: not a JSON Ignition config: %w", err)
	}
	v := head.Ignition.Version
	switch {
	case v == "":
		return nil, fmt.Errorf("ignition: field ignition.version is missing: not an Ignition config")
	case v == "2.2.0" || v == "2.3.0" || v == "2.4.0":
		return parseV2(data, v)
	case strings.HasPrefix(v, "3.") && isSupported(v):
		return parseV3(data, v)
	}
	return nil, fmt.Errorf("ignition: spec version %q is not supported (supported: %s)", v, strings.Join(Supported, ", "))
}

func isSupported(v string) bool {
	for _, s := range Supported {
		if s == v {
			return true
		}
	}
	return false
}

// addFile records one file's contents source.
func (c *Config) addFile(version, field, path, source, compression string, hash string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("ignition spec %s: %s.path %q: not an absolute path", version, field, path)
	}
	if source == "" {
		c.Files[path] = nil
		return nil
	}
	if !strings.HasPrefix(source, "data:") {
		c.Remote[path] = source
		return nil
	}
	data, err := decodeContents(source, compression, hash)
	if err != nil {
		return fmt.Errorf("ignition spec %s: %s.contents (file %s): %w", version, field, path, err)
	}
	c.Files[path] = data
	return nil
}

func newConfig(version string) *Config {
	return &Config{Version: version, Files: map[string][]byte{}, Remote: map[string]string{}, Units: map[string]Unit{}}
}
