package plan

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ContainerRuntime says who runs a host's container runtime (a
// WindowsInstance's spec.containerRuntime).
type ContainerRuntime string

const (
	// RuntimeManaged: winnode installs containerd from its payload, with
	// its configuration, registries and the Windows Containers feature,
	// and upgrades and removes it with the rest of the plan.
	RuntimeManaged ContainerRuntime = "Managed"
	// RuntimeExisting: the host runs a containerd winnode did not install;
	// the plan relies on its service and never touches it (HostServices).
	RuntimeExisting ContainerRuntime = "Existing"
)

// Where a managed containerd lives on the host, as the Windows Machine
// Config Operator lays it out (C:\k\containerd): its programs, its
// configuration and one hosts.toml folder per registry.
const (
	ContainerdDir        = `C:\k\containerd`
	ContainerdConfigPath = `C:\k\containerd\containerd.toml`
	// RegistryDir is containerd's registry config_path: one folder per
	// registry host holding its hosts.toml (HostFolder names it).
	RegistryDir = `C:\k\containerd\certs.d`
	// Its log, ContainerdLogFile, is in wrapped.go with the others'.
	// ContainerdPipe is the named pipe containerd serves its API and CRI
	// on, what the kubelet's ContainerdEndpoint names.
	ContainerdPipe = `\\.\pipe\containerd-containerd`
	// ContainersFeature is the Windows optional feature containerd needs
	// (the host compute service behind Windows containers).
	ContainersFeature = "Containers"
	// DefaultSandboxImage is the pod sandbox ("pause") image containerd
	// v2.4 pins on Windows: the multi-arch registry.k8s.io/pause, which has
	// an image for each Windows Server build (containerd config default).
	DefaultSandboxImage = "registry.k8s.io/pause:3.10.2"
	// DefaultRuntimeHandler is the runtime containerd runs pods with:
	// process-isolated Windows containers through the runhcs shim.
	DefaultRuntimeHandler = "runhcs-wcow-process"
	// ContainerdConfigVersion is the configuration version containerd
	// v2.4 writes and reads natively. Version 3 (containerd 2.0 to 2.3) is
	// still read, but migrated with a warning at every start ("Configuration
	// migrated from version 3, use `containerd config migrate` to avoid
	// migration"); the sections winnode writes are the same in both. Since
	// winnode ships the containerd it configures, it writes version 4.
	ContainerdConfigVersion = 4
)

// Payload entries of the managed runtime.
const (
	PayloadContainerd = "containerd.exe"
	// PayloadContainerdShim is hcsshim's runtime shim, which containerd
	// starts for each pod (runtime_type io.containerd.runhcs.v1): it must
	// sit beside containerd.exe, where containerd looks for it first.
	PayloadContainerdShim = "containerd-shim-runhcs-v1.exe"
)

// RuntimeFacts say who runs the host's container runtime and, when winnode
// does, how containerd is configured.
type RuntimeFacts struct {
	// Mode is RuntimeManaged or RuntimeExisting; "" is RuntimeExisting,
	// the plan as it was before winnode managed containerd.
	Mode ContainerRuntime
	// SandboxImage is the pod sandbox image ("": DefaultSandboxImage).
	SandboxImage string
	// Registries are the hosts.toml of each registry (registries.go).
	Registries []RegistryHosts
}

// managed says whether the plan installs containerd.
func (in RenderInput) managed() bool { return in.Runtime.Mode == RuntimeManaged }

// sandboxImage is the configured sandbox image or the default.
func (r RuntimeFacts) sandboxImage() string {
	if r.SandboxImage != "" {
		return r.SandboxImage
	}
	return DefaultSandboxImage
}

// check refuses runtime facts the plan cannot be made from.
func (r RuntimeFacts) check() []error {
	var errs []error
	switch r.Mode {
	case "", RuntimeExisting:
		if len(r.Registries) > 0 {
			errs = append(errs, errors.New("registries are configured only in a containerd winnode manages (containerRuntime Managed)"))
		}
	case RuntimeManaged:
	default:
		errs = append(errs, fmt.Errorf("container runtime %q: it is %s or %s", r.Mode, RuntimeManaged, RuntimeExisting))
	}
	if strings.ContainsAny(r.SandboxImage, " \t\r\n'\"\\") {
		errs = append(errs, fmt.Errorf("sandbox image %q is not an image reference", r.SandboxImage))
	}
	seen := map[string]bool{}
	for _, reg := range r.Registries {
		if err := reg.check(); err != nil {
			errs = append(errs, err)
		}
		folder := strings.ToLower(HostFolder(reg.Host))
		if seen[folder] {
			errs = append(errs, fmt.Errorf("registry %s is configured twice", reg.Host))
		}
		seen[folder] = true
	}
	return errs
}

// containerdFiles are the generated files of a managed containerd: its
// configuration and each registry's hosts.toml and CA files.
func (in RenderInput) containerdFiles() ([]GeneratedFile, error) {
	if !in.managed() {
		return nil, nil
	}
	files := []GeneratedFile{{HostPath: ContainerdConfigPath, Content: containerdConfig(in.Runtime)}}
	for _, reg := range in.Runtime.Registries {
		files = append(files, reg.files()...)
	}
	return files, nil
}

// containerdDirectories are the folders of a managed containerd.
func (in RenderInput) containerdDirectories() []Directory {
	if !in.managed() {
		return nil
	}
	// Its log folder is every wrapped service's (logDirs).
	dirs := []Directory{{Path: ContainerdDir}, {Path: RegistryDir}}
	for _, reg := range in.Runtime.Registries {
		dirs = append(dirs, Directory{Path: reg.folder()})
	}
	return dirs
}

// containerdConfig is containerd's configuration (version 4): the sandbox
// image, where its registries' hosts.toml are, the runtime pods run with,
// and the CNI folders winnode fills. Everything else keeps containerd's
// Windows defaults (`containerd config default`). The keys are the CRI
// plugins' of containerd v2 (plugins/cri/images and plugins/cri/runtime);
// the CNI key is bin_dirs, a list: a bin_dir there is only warned about
// ("Ignoring unknown key") and the default folder stays.
func containerdConfig(r RuntimeFacts) []byte {
	var b bytes.Buffer
	b.WriteString("# containerd's configuration, written by winnode: the next apply overwrites changes.\n")
	fmt.Fprintf(&b, "version = %d\n\n", ContainerdConfigVersion)
	b.WriteString("[plugins.'io.containerd.cri.v1.images'.pinned_images]\n")
	fmt.Fprintf(&b, "  sandbox = %s\n\n", tomlString(r.sandboxImage()))
	b.WriteString("[plugins.'io.containerd.cri.v1.images'.registry]\n")
	fmt.Fprintf(&b, "  config_path = %s\n\n", tomlString(RegistryDir))
	b.WriteString("[plugins.'io.containerd.cri.v1.runtime'.containerd]\n")
	fmt.Fprintf(&b, "  default_runtime_name = %s\n\n", tomlString(DefaultRuntimeHandler))
	b.WriteString("[plugins.'io.containerd.cri.v1.runtime'.cni]\n")
	fmt.Fprintf(&b, "  bin_dirs = [%s]\n", tomlString(CNIBinDir))
	fmt.Fprintf(&b, "  conf_dir = %s\n", tomlString(CNIConfDir))
	return b.Bytes()
}

// containerdService runs containerd through winnode-service.exe
// (wrapped.go says why containerd, which could answer the service control
// manager itself, is wrapped), with its configuration, its log in
// ContainerdLogFile. Once started, apply waits for its pipe (ReadyPipe):
// the service runs as soon as winnode-service answers the service control
// manager, containerd only once it serves its API. When new programs fail
// to start, apply puts the previous ones back (Rollback).
func (in RenderInput) containerdService() Service {
	ctd, _ := in.Payload.Lookup(PayloadContainerd)
	shim, _ := in.Payload.Lookup(PayloadContainerdShim)
	return in.wrap(Service{
		Name:        ContainerdService,
		DisplayName: "containerd container runtime",
		Uses:        []string{shim.HostPath, ContainerdConfigPath},
		StartType:   StartAuto,
		Recovery:    serviceRecovery,
		Environment: in.proxyEnvironment(nil),
		ReadyPipe:   ContainerdPipe,
		Rollback:    []string{ctd.HostPath, shim.HostPath},
	}, ctd.HostPath, "--config", ContainerdConfigPath, "--log-level", "info")
}

// runtimeServices is the containerd service where winnode manages it.
func (in RenderInput) runtimeServices() []Service {
	if !in.managed() {
		return nil
	}
	return []Service{in.containerdService()}
}

// hostServices are the services the plan relies on without managing them:
// the host's own containerd, unless winnode manages it.
func (in RenderInput) hostServices() []string {
	if in.managed() {
		return nil
	}
	return []string{ContainerdService}
}

// windowsFeatures are the Windows features a managed containerd needs.
func (in RenderInput) windowsFeatures() []string {
	if !in.managed() {
		return nil
	}
	return []string{ContainersFeature}
}

// defenderExclusions are winnode's programs that run as services, which
// Microsoft Defender Antivirus is asked not to scan where it runs (as the
// Windows Machine Config Operator excludes containerd's process).
func defenderExclusions(p *Plan) []string {
	var out []string
	for _, s := range p.Services {
		for _, path := range append([]string{s.Binary}, s.Uses...) {
			if strings.HasSuffix(strings.ToLower(path), ".exe") && !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, path) }) {
				out = append(out, path)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return out
}

// runtimePayload are the payload entries the managed runtime needs.
func (in RenderInput) runtimePayload() []string {
	if !in.managed() {
		return nil
	}
	return []string{PayloadContainerd, PayloadContainerdShim}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
