package standin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// containerd's configuration, read as containerd v2.4 reads it
// (cmd/containerd/server/config/config.go LoadConfig and the CRI plugins'
// Decode), with the same go-toml library and the same words:
//
//   - a file that does not parse stops containerd: "failed to unmarshal
//     TOML at row R column C: ...";
//   - a version above 4 stops it: "failed to load TOML from PATH: expected
//     containerd config version equal to or less than `4`, got `5`";
//   - an older version is migrated, with a warning at every start; of
//     version 2 the CRI plugin's cni, sandbox_image and registry move to
//     the v2 plugins (plugins/cri/runtime and images plugin.go);
//   - an unknown key is only a warning ("Ignoring unknown key in TOML",
//     "... for plugin"), and the default stays: a version-3 bin_dir under
//     the CRI runtime's cni leaves the default bin_dirs.
//
// Only the keys the simulation uses are read into containerdRuntime; the
// other plugins' sections are accepted as they are.

// containerd's Windows defaults (`containerd config default` of v2.4.2).
const (
	containerdConfigVersion  = 4
	defaultContainerdConfig  = `C:\Program Files\containerd\config.toml`
	defaultCNIBinDir         = `C:\Program Files\containerd\cni\bin`
	defaultSandboxImage      = "registry.k8s.io/pause:3.10.2"
	containerdRuntimePlugin  = "io.containerd.cri.v1.runtime"
	containerdImagesPlugin   = "io.containerd.cri.v1.images"
	containerdV2CRIPlugin    = "io.containerd.grpc.v1.cri"
	containerdPipeDefault    = `\\.\pipe\containerd-containerd`
	containerdConfigTopLevel = "cgroup debug disabled_plugins grpc imports metrics oom_score plugins proxy_plugins required_plugins root state stream_processors temp timeouts ttrpc version"
)

// containerdRuntime is what the simulated containerd runs with, and tells
// the simulated kubelet over its pipe (containerd_api.go).
type containerdRuntime struct {
	Version      string   `json:"version"`
	ConfigPath   string   `json:"configPath"`
	CNIBinDirs   []string `json:"cniBinDirs"`
	CNIConfDir   string   `json:"cniConfDir"`
	SandboxImage string   `json:"sandboxImage"`
	// RegistryConfigPath is the registry config_path: the folder of one
	// hosts.toml folder per registry ("": none).
	RegistryConfigPath string `json:"registryConfigPath"`
}

// cniSection is the CRI runtime plugin's cni table.
type cniSection struct {
	BinDirs             []string `toml:"bin_dirs"`
	ConfDir             string   `toml:"conf_dir"`
	MaxConfNum          int      `toml:"max_conf_num"`
	SetupSerially       bool     `toml:"setup_serially"`
	ConfTemplate        string   `toml:"conf_template"`
	IPPref              string   `toml:"ip_pref"`
	UseInternalLoopback bool     `toml:"use_internal_loopback"`
}

// loadContainerdConfig reads path as containerd does; explicit says
// --config was given (a missing file is then an error, else the defaults).
func loadContainerdConfig(log *logger, path string, explicit bool) (*containerdRuntime, error) {
	rt := &containerdRuntime{Version: ContainerdVersion, ConfigPath: path, CNIBinDirs: []string{defaultCNIBinDir},
		CNIConfDir: defaultCNIConfDir, SandboxImage: defaultSandboxImage}
	local, err := hostPath(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(local)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return rt, nil
	}
	if err != nil {
		//lint:ignore ST1005 Windows' own words (ERROR_FILE_NOT_FOUND), period included, as containerd prints them
		return nil, fmt.Errorf("open %s: The system cannot find the file specified.", path)
	}
	var top map[string]any
	if err := toml.Unmarshal(data, &top); err != nil {
		var derr *toml.DecodeError
		if errors.As(err, &derr) {
			row, col := derr.Position()
			return nil, fmt.Errorf("failed to unmarshal TOML at row %d column %d: %w", row, col, err)
		}
		return nil, fmt.Errorf("failed to unmarshal TOML: %w", err)
	}
	for k := range top {
		if !strings.Contains(" "+containerdConfigTopLevel+" ", " "+k+" ") {
			log.Warningf(`Ignoring unknown key in TOML file=%q key=%q`, path, k)
		}
	}
	version, _ := top["version"].(int64)
	if version > containerdConfigVersion {
		return nil, fmt.Errorf("failed to load TOML from %s: expected containerd config version equal to or less than `%d`, got `%d`", path, containerdConfigVersion, version)
	}
	plugins, _ := top["plugins"].(map[string]any)
	if plugins == nil {
		plugins = map[string]any{}
	}
	if version < containerdConfigVersion {
		migrateContainerdConfig(plugins, version)
		log.Warningf("Configuration migrated from version %d, use `containerd config migrate` to avoid migration", max(version, 1))
	}
	if err := rt.readPlugins(log, plugins); err != nil {
		return nil, err
	}
	return rt, nil
}

// migrateContainerdConfig moves version 2's CRI settings to where version
// 3 and 4 keep them (the plugins' ConfigMigration).
func migrateContainerdConfig(plugins map[string]any, version int64) {
	old, ok := plugins[containerdV2CRIPlugin].(map[string]any)
	if !ok || version >= 3 {
		return
	}
	runtime := subtable(plugins, containerdRuntimePlugin)
	images := subtable(plugins, containerdImagesPlugin)
	if cni, ok := old["cni"].(map[string]any); ok {
		dst := subtable(runtime, "cni")
		for k, v := range cni {
			if k == "bin_dir" {
				dst["bin_dirs"] = []any{v}
				continue
			}
			dst[k] = v
		}
	}
	if s, ok := old["sandbox_image"]; ok {
		subtable(images, "pinned_images")["sandbox"] = s
	}
	if r, ok := old["registry"]; ok {
		images["registry"] = r
	}
}

func subtable(m map[string]any, key string) map[string]any {
	t, ok := m[key].(map[string]any)
	if !ok {
		t = map[string]any{}
		m[key] = t
	}
	return t
}

// readPlugins reads the CRI plugins' settings the simulation uses, each
// decoded strictly first: unknown keys are warned about and ignored, as
// containerd's Config.Decode does.
func (rt *containerdRuntime) readPlugins(log *logger, plugins map[string]any) error {
	var runtime struct {
		CNI cniSection `toml:"cni"`
	}
	runtime.CNI.BinDirs, runtime.CNI.ConfDir = rt.CNIBinDirs, rt.CNIConfDir
	if err := decodePlugin(log, plugins, containerdRuntimePlugin, &runtime, "cni"); err != nil {
		return err
	}
	var images struct {
		PinnedImages struct {
			Sandbox string `toml:"sandbox"`
		} `toml:"pinned_images"`
		Registry struct {
			ConfigPath string `toml:"config_path"`
		} `toml:"registry"`
	}
	images.PinnedImages.Sandbox = rt.SandboxImage
	if err := decodePlugin(log, plugins, containerdImagesPlugin, &images, "pinned_images", "registry"); err != nil {
		return err
	}
	rt.CNIBinDirs, rt.CNIConfDir = runtime.CNI.BinDirs, runtime.CNI.ConfDir
	rt.SandboxImage, rt.RegistryConfigPath = images.PinnedImages.Sandbox, images.Registry.ConfigPath
	return nil
}

// decodePlugin decodes the tables of one plugin's section the simulation
// reads (the others are the real plugin's, accepted as they are) into
// out, strictly first, warning about each unknown key.
func decodePlugin(log *logger, plugins map[string]any, id string, out any, tables ...string) error {
	section, ok := plugins[id].(map[string]any)
	if !ok {
		return nil
	}
	read := map[string]any{}
	for _, t := range tables {
		if v, ok := section[t]; ok {
			read[t] = v
		}
	}
	b, err := toml.Marshal(read)
	if err != nil {
		return err
	}
	err = toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields().Decode(out)
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		for _, e := range strict.Errors {
			log.Warningf(`Ignoring unknown key in TOML for plugin key=%q plugin=%s`, strings.Join(e.Key(), " "), id)
		}
		err = toml.Unmarshal(b, out)
	}
	if err != nil {
		return fmt.Errorf("plugin %s: %w", id, err)
	}
	return nil
}
