package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/testkit"
)

// managedInput is renderInput with winnode managing containerd: a mirror
// with a CA and credentials, a registry with a port, a proxy and its CA.
func managedInput() RenderInput {
	in := renderInput()
	in.Payload.Files = append(slices.Clone(in.Payload.Files),
		payload.File{Name: PayloadContainerd, HostPath: `C:\k\containerd\containerd.exe`, SHA256: strings.Repeat("1", 64), Size: 500, Version: "v2.4.2"},
		payload.File{Name: PayloadContainerdShim, HostPath: `C:\k\containerd\containerd-shim-runhcs-v1.exe`, SHA256: strings.Repeat("2", 64), Size: 600, Version: "v0.15.0-rc.3"})
	in.Runtime = RuntimeFacts{Mode: RuntimeManaged, Registries: []RegistryHosts{
		{Host: "quay.io", Mirrors: []RegistryHost{
			{URL: "https://mirror.example.com/quay", Capabilities: []string{"pull", "resolve"}, CA: []byte(testCA),
				Header: map[string][]string{"authorization": {"Basic dXNlcjpzZWNyZXQ="}}},
			{URL: "https://backup.example.com", Capabilities: []string{"pull"}},
		}},
		{Host: "myreg:5000", Server: RegistryHost{URL: "http://myreg:5000"}},
	}}
	in.Proxy = ProxyFacts{HTTPProxy: "http://proxy.example.com:3128", HTTPSProxy: "http://proxy.example.com:3128", NoProxy: "10.0.0.0/8,.example.com"}
	in.TrustedCA = []byte(testCA)
	return in
}

// A managed containerd's plan, its configuration and a hosts.toml are
// golden files: a change to one changes what every managed host runs.
func TestRenderManagedGolden(t *testing.T) {
	r, err := Render(managedInput())
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "render-managed.golden.json", r.JSON)
	testkit.Golden(t, "containerd.golden.toml", findGenerated(t, r, ContainerdConfigPath))
	testkit.Golden(t, "hosts-quay.io.golden.toml", findGenerated(t, r, `C:\k\containerd\certs.d\quay.io\hosts.toml`))
	testkit.Golden(t, "hosts-myreg_5000_.golden.toml", findGenerated(t, r, `C:\k\containerd\certs.d\myreg_5000_\hosts.toml`))
}

// The managed plan runs containerd as its own service, before the kubelet,
// needs the Containers feature, and relies on no host service.
func TestRenderManagedRuntime(t *testing.T) {
	r, err := Render(managedInput())
	if err != nil {
		t.Fatal(err)
	}
	p := r.Plan
	if len(p.HostServices) != 0 || !slices.Equal(p.WindowsFeatures, []string{ContainersFeature}) {
		t.Errorf("hostServices %v, windowsFeatures %v: want none and [Containers]", p.HostServices, p.WindowsFeatures)
	}
	ctd := findService(t, p, ContainerdService)
	// Wrapped by winnode-service.exe, its log rotated as every wrapped
	// service's (wrapped.go says why).
	wrapped := ctd.Binary == `C:\k\winnode-service.exe` && slices.Contains(ctd.Args, ContainerdLogFile) &&
		slices.Contains(ctd.Args, "--log-file-size") && !slices.Contains(ctd.Args, "--run-service")
	if ctd.ReadyPipe != ContainerdPipe || !slices.Contains(ctd.Rollback, `C:\k\containerd\containerd.exe`) || !wrapped {
		t.Errorf("containerd service %+v: want winnode-service.exe with %s, its pipe awaited, its programs rolled back", ctd, ContainerdLogFile)
	}
	order, err := StartOrder(p.Services)
	if err != nil || order[0] != ContainerdService {
		t.Errorf("start order %v (%v): containerd first", order, err)
	}
	if !slices.Contains(p.DefenderExclusions, `C:\k\containerd\containerd.exe`) || !slices.Equal(p.RootCertificates, []string{TrustedCAPath}) {
		t.Errorf("defender exclusions %v, root certificates %v", p.DefenderExclusions, p.RootCertificates)
	}
	existing := renderInput()
	r2, err := Render(existing)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r2.Plan.HostServices, []string{ContainerdService}) || len(r2.Plan.WindowsFeatures) != 0 {
		t.Errorf("the Existing plan relies on the host's containerd: hostServices %v, features %v", r2.Plan.HostServices, r2.Plan.WindowsFeatures)
	}
	if _, ok := r2.Plan.Service(ContainerdService); ok {
		t.Error("the Existing plan manages a containerd service")
	}
}

// containerd's configuration is valid TOML of version 4 with the keys
// winnode relies on; bin_dirs is a list (a bin_dir would be ignored).
func TestContainerdConfig(t *testing.T) {
	var cfg map[string]any
	if err := toml.Unmarshal(containerdConfig(RuntimeFacts{SandboxImage: "mcr.microsoft.com/oss/kubernetes/pause:3.10"}), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["version"] != int64(4) {
		t.Errorf("version %v, want 4", cfg["version"])
	}
	plugins := cfg["plugins"].(map[string]any)
	cni := plugins["io.containerd.cri.v1.runtime"].(map[string]any)["cni"].(map[string]any)
	if dirs, ok := cni["bin_dirs"].([]any); !ok || len(dirs) != 1 || dirs[0] != CNIBinDir {
		t.Errorf("bin_dirs = %v, want [%s]", cni["bin_dirs"], CNIBinDir)
	}
	images := plugins["io.containerd.cri.v1.images"].(map[string]any)
	if images["pinned_images"].(map[string]any)["sandbox"] != "mcr.microsoft.com/oss/kubernetes/pause:3.10" {
		t.Errorf("sandbox image: %v", images["pinned_images"])
	}
	if images["registry"].(map[string]any)["config_path"] != RegistryDir {
		t.Errorf("config_path: %v", images["registry"])
	}
}

// containerd on Windows names a registry's folder with the port between
// underscores; the names go both ways.
func TestHostFolder(t *testing.T) {
	for host, folder := range map[string]string{
		"quay.io":              "quay.io",
		"myreg:5000":           "myreg_5000_",
		"10.0.0.1:443":         "10.0.0.1_443_",
		"_default":             "_default",
		"registry.example.com": "registry.example.com",
	} {
		if got := HostFolder(host); got != folder {
			t.Errorf("HostFolder(%q) = %q, want %q", host, got, folder)
		}
		if got := HostOfFolder(folder); got != host {
			t.Errorf("HostOfFolder(%q) = %q, want %q", folder, got, host)
		}
	}
	for _, folder := range []string{"a_b_", "reg_123456_", "_x_"} {
		if got := HostOfFolder(folder); got != folder {
			t.Errorf("HostOfFolder(%q) = %q: not a port, the name stays", folder, got)
		}
	}
}

// NO_PROXY always holds the node's names and addresses and the cluster's
// networks, whatever the cluster's own list says.
func TestNoProxy(t *testing.T) {
	in := managedInput()
	env := in.proxyEnvironment(map[string]string{"NODE_NAME": "x"})
	for _, want := range []string{"10.0.0.5", "192.168.1.5", "win-abc123", "win-abc123.example.com", "10.244.0.0/16", "10.96.0.0/12", ".cluster.local", ".svc", "10.0.0.0/8", ".example.com", "localhost"} {
		if !slices.Contains(strings.Split(env["NO_PROXY"], ","), want) {
			t.Errorf("NO_PROXY %q lacks %s", env["NO_PROXY"], want)
		}
	}
	if env["HTTPS_PROXY"] != "http://proxy.example.com:3128" || env["NODE_NAME"] != "x" {
		t.Errorf("environment %v", env)
	}
	in.Proxy = ProxyFacts{}
	if env := in.proxyEnvironment(nil); env != nil {
		t.Errorf("no proxy, yet an environment %v", env)
	}
}

// Runtime facts the plan cannot be made from are refused, each named.
func TestRuntimeFactsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*RenderInput)
		want string
	}{
		"registries with Existing": {func(in *RenderInput) { in.Runtime.Mode = RuntimeExisting }, "only in a containerd winnode manages"},
		"unknown mode":             {func(in *RenderInput) { in.Runtime.Mode = "Foreign" }, `container runtime "Foreign"`},
		"bad host": {func(in *RenderInput) {
			in.Runtime.Registries = []RegistryHosts{{Host: "quay.io/org"}}
		}, "not a registry host"},
		"bad capability": {func(in *RenderInput) {
			in.Runtime.Registries = []RegistryHosts{{Host: "quay.io", Mirrors: []RegistryHost{{URL: "https://m", Capabilities: []string{"fetch"}}}}}
		}, `capability "fetch"`},
		"bad mirror url": {func(in *RenderInput) {
			in.Runtime.Registries = []RegistryHosts{{Host: "quay.io", Mirrors: []RegistryHost{{URL: "ftp://m"}}}}
		}, "not an http or https URL"},
		"twice": {func(in *RenderInput) {
			in.Runtime.Registries = []RegistryHosts{{Host: "Quay.io"}, {Host: "quay.io"}}
		}, "configured twice"},
		"no payload": {func(in *RenderInput) {
			in.Payload = renderInput().Payload
		}, "the payload has no containerd.exe"},
		"bad proxy": {func(in *RenderInput) { in.Proxy.HTTPSProxy = "proxy:3128" }, "HTTPS_PROXY"},
	} {
		t.Run(name, func(t *testing.T) {
			in := managedInput()
			tc.edit(&in)
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A plan names only its own files as Defender exclusions, root
// certificates and rollback files, and only local pipes.
func TestValidateHostSettings(t *testing.T) {
	r, err := Render(managedInput())
	if err != nil {
		t.Fatal(err)
	}
	p := *r.Plan
	p.DefenderExclusions = []string{`C:\Windows\System32\cmd.exe`, `C:\k\other.exe`}
	p.RootCertificates = []string{`C:\k\elsewhere.pem`}
	p.WindowsFeatures = []string{"Containers; rm"}
	svcs := slices.Clone(p.Services)
	svcs[0].ReadyPipe = `\\server\pipe\x`
	svcs[0].Rollback = []string{`C:\k\kubelet.exe`}
	p.Services = svcs
	err = p.Validate()
	for _, want := range []string{"defenderExclusions[0]", "defenderExclusions[1]", "rootCertificates[0]", "windowsFeatures[0]", "readyPipe", "rollback[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %s refused", err, want)
		}
	}
}
