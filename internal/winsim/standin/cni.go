package standin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/winnode/winnode/internal/simhns"
)

// Where containerd on Windows reads its configuration and, unless that
// configuration says otherwise, its CNI configuration and plugins
// (containerd's defaults for Windows: `containerd config default` prints
// these paths).
const (
	ContainerdConfigPath   = `C:\Program Files\containerd\config.toml`
	defaultCNIConfDir      = `C:\Program Files\containerd\cni\conf`
	networkNotReadyMessage = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
)

// containerdConfig is the part of containerd's config.toml (version 2, as
// containerd 1.7 writes it) that says where the CRI plugin reads CNI
// configuration from.
type containerdConfig struct {
	Plugins struct {
		CRI struct {
			CNI struct {
				BinDir  string `toml:"bin_dir"`
				ConfDir string `toml:"conf_dir"`
			} `toml:"cni"`
		} `toml:"io.containerd.grpc.v1.cri"`
	} `toml:"plugins"`
}

// cniConfDir is the folder containerd's CRI plugin loads CNI configuration
// from: conf_dir of config.toml, else containerd's Windows default. A
// config.toml that does not parse stops containerd ("failed to load TOML"),
// and so has no network either.
func cniConfDir() (string, error) {
	p, err := hostPath(ContainerdConfigPath)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return defaultCNIConfDir, nil
	}
	if err != nil {
		return "", err
	}
	var cfg containerdConfig
	if err := toml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("failed to load TOML from %s: %v", ContainerdConfigPath, err)
	}
	if dir := cfg.Plugins.CRI.CNI.ConfDir; dir != "" {
		return strings.ReplaceAll(dir, "/", `\`), nil
	}
	return defaultCNIConfDir, nil
}

// cniNetwork is a loaded CNI network configuration: its name, and the type
// of its (first) plugin.
type cniNetwork struct {
	Name       string
	PluginType string
	File       string
	Raw        []byte
}

// loadCNINetwork is containerd's CNI load (github.com/containerd/go-cni with
// libcni's ConfFiles): the files of confDir ending in .conf, .conflist or
// .json, in lexical order, the first that parses wins. No file, or none
// valid, is "cni plugin not initialized".
func loadCNINetwork(confDir string) (*cniNetwork, error) {
	dir, err := hostPath(confDir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if ext := strings.ToLower(filepath.Ext(e.Name())); !e.IsDir() && (ext == ".conf" || ext == ".conflist" || ext == ".json") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var problems []string
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		n, err := parseCNIConfig(data)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		n.File = confDir + `\` + name
		return n, nil
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("no valid network config in %s (%s)", confDir, strings.Join(problems, "; "))
	}
	return nil, fmt.Errorf("no network config found in %s", confDir)
}

// parseCNIConfig checks one file as libcni does: a network list
// (`plugins`) or a single network (`type`), with a name and cniVersion.
func parseCNIConfig(data []byte) (*cniNetwork, error) {
	var c struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Type       string `json:"type"`
		Plugins    []struct {
			Type string `json:"type"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("error parsing configuration: %v", err)
	}
	if c.Name == "" {
		return nil, errors.New("error parsing configuration: missing 'name'")
	}
	if c.CNIVersion == "" {
		return nil, errors.New("error parsing configuration: missing 'cniVersion'")
	}
	n := &cniNetwork{Name: c.Name, PluginType: c.Type, Raw: data}
	if c.Type == "" {
		if len(c.Plugins) == 0 {
			return nil, errors.New("error parsing configuration: missing 'type' or 'plugins'")
		}
		for i, p := range c.Plugins {
			if p.Type == "" {
				return nil, fmt.Errorf("error parsing configuration list: plugin %d has no 'type'", i)
			}
		}
		n.PluginType = c.Plugins[0].Type
	}
	return n, nil
}

// networkStatus is containerd's CRI NetworkReady, as the kubelet sees it:
// nil once a valid CNI configuration is loaded and, for the Windows
// plugins that attach pods to an HNS network by name (win-overlay,
// win-bridge, sdnoverlay, sdnbridge), that network exists. (containerd
// itself only loads the configuration; the plugin fails each pod sandbox
// while the network is missing. The simulator reports that state as not
// ready at once, so that a node whose pods could not start is never Ready.)
func networkStatus() (*cniNetwork, error) {
	dir, err := cniConfDir()
	if err != nil {
		return nil, err
	}
	n, err := loadCNINetwork(dir)
	if err != nil {
		return nil, err
	}
	switch n.PluginType {
	case "win-overlay", "win-bridge", "sdnoverlay", "sdnbridge":
		hns, err := simhns.FromEnv()
		if err != nil {
			return nil, err
		}
		if _, err := hns.Network(n.Name); err != nil {
			return nil, fmt.Errorf("%s names HNS network %q: %w", n.File, n.Name, err)
		}
	}
	return n, nil
}
