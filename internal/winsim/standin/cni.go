package standin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/winnode/winnode/internal/simhns"
)

// containerd's default CNI configuration folder on Windows, and the
// kubelet's message while no network is ready.
const (
	defaultCNIConfDir      = `C:\Program Files\containerd\cni\conf`
	networkNotReadyMessage = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
)

// cniNetwork is a loaded CNI network configuration: its name, and the type
// of its (first) plugin.
type cniNetwork struct {
	Name       string
	PluginType string
	File       string
	Raw        []byte
	// BinDirs are the folders containerd runs CNI plugins from.
	BinDirs []string
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
func (k *kubelet) networkStatus() (*cniNetwork, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, err := k.ctd.runtime(ctx)
	if err != nil {
		return nil, err
	}
	n, err := loadCNINetwork(rt.CNIConfDir)
	if err != nil {
		return nil, err
	}
	n.BinDirs = rt.CNIBinDirs
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
