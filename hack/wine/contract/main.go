// Command contract writes down everything winnode hands to the payload's
// programs, so that the Wine tier (hack/wine/contract.sh) can check it
// against the real programs: every service command line and every
// generated configuration file of every plan the renderer can produce, and
// of the Ignition bootstrap path (`winnode-agent bootstrap`).
//
//	go run ./hack/wine/contract PAYLOAD-DIR OUT-DIR
//
// The renderer's input space is enumerated: each network mode (flannel,
// ovn-hybrid, external), each platform (Kubernetes; OpenShift with its
// kubelet CA and external cloud provider), each Windows Server build
// winnode knows (internal/controller WindowsReleases), BYOH and Machines
// (a provider ID); the files kube-proxy's service writes on the host once
// the Node has its pod subnet (plan.PodNetwork.Files); and the bootstrap
// path on each worker Ignition fixture of internal/ignition.
//
// OUT-DIR receives, each written once however many cases share it:
//
//	services/N.cmd     a service's binary and arguments, NUL-separated
//	services/N.cases   the cases that run it, one a line
//	configs/KIND/N.EXT a generated file (KIND: kubelet, kube-proxy, cni)
//	configs/KIND/N.EXT.cases
//	programs.tsv       each payload program: host path, payload file, version
//	negative/kubelet-logtostderr.cmd  a rendered kubelet command line with
//	                   --logtostderr=false put back (the check must fail)
//	negative/csi-proxy-unknown.cmd    a rendered csi-proxy command line with
//	                   a flag csi-proxy lacks (the check must fail)
//
// It only renders: nothing is run, nothing is changed. `contract split`
// turns what `winnode-service --dry-run` prints into the program and
// arguments it would run, NUL-separated.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	certutil "k8s.io/client-go/util/cert"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/ignition"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/svcwrap"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 2 && os.Args[1] == "split":
		err = split(os.Stdin, os.Stdout)
	case len(os.Args) == 3:
		var m *payload.Manifest
		if m, err = payload.Load(os.Args[1]); err == nil {
			err = write(m, os.Args[2], filepath.Join("internal", "ignition", "testdata"))
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: contract PAYLOAD-DIR OUT-DIR | contract split < winnode-service-dry-run.json")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "contract:", err)
		os.Exit(1)
	}
}

// split reads what `winnode-service --dry-run` printed and writes the
// program and its arguments, NUL-separated, for the Wine tier to run.
func split(in io.Reader, out io.Writer) error {
	var r svcwrap.Command
	dec := json.NewDecoder(in)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("reading winnode-service --dry-run's output: %w", err)
	}
	_, err := io.WriteString(out, strings.Join(append([]string{r.Program}, r.Args...), "\x00"))
	return err
}

// write renders every case with the payload's manifest and writes what
// they hand to programs into out.
func write(m *payload.Manifest, out, ignitionFixtures string) error {
	w := newWriter(out)
	for _, c := range renderCases(m) {
		w.cases++
		r, err := plan.Render(c.in)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.name, err)
		}
		for _, s := range r.Plan.Services {
			w.service(c.name+"/"+s.Name, s)
		}
		for _, g := range r.Generated {
			w.config(c.name, g.HostPath, g.Content)
		}
		written, err := subnetFiles(r, c.in.Network.PodCIDR)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.name, err)
		}
		for _, g := range written {
			w.config(c.name, g.HostPath, g.Content)
		}
		if c.negative {
			if err := w.negative(r.Plan); err != nil {
				return err
			}
		}
	}
	// Where each payload program is installed, its file in the payload
	// and the version its --version prints.
	var programs strings.Builder
	for _, f := range m.Files {
		fmt.Fprintf(&programs, "%s\t%s\t%s\n", f.HostPath, f.Name, f.Version)
	}
	w.files["programs.tsv"] = []byte(programs.String())
	if err := exporterTLS(w); err != nil {
		return err
	}
	fixtures, err := filepath.Glob(filepath.Join(ignitionFixtures, "worker-*.ign"))
	if err != nil || len(fixtures) == 0 {
		return fmt.Errorf("no worker Ignition fixtures in %s (%v)", ignitionFixtures, err)
	}
	for _, f := range fixtures {
		w.cases++
		if err := bootstrapCase(w, f); err != nil {
			return fmt.Errorf("bootstrap on %s: %w", f, err)
		}
	}
	return w.flush()
}

// renderCase is one input of the renderer.
type renderCase struct {
	name     string
	in       plan.RenderInput
	negative bool // the case the negative check starts from
}

// windowsBuilds are the Windows Server builds winnode knows
// (internal/controller WindowsReleases: 2019, 2022, 2025).
var windowsBuilds = map[string]string{"2019": "10.0.17763", "2022": "10.0.20348", "2025": "10.0.26100"}

// renderCases is the renderer's input space, one case per combination.
func renderCases(m *payload.Manifest) []renderCase {
	var cases []renderCase
	for _, mode := range []string{plan.NetworkFlannel, plan.NetworkOVNHybrid, plan.NetworkExternal} {
		for _, platform := range []string{"kubernetes", "openshift"} {
			for _, release := range slices.Sorted(mapsKeys(windowsBuilds)) {
				for _, source := range []string{"byoh", "machine", "workload"} {
					if source == "workload" && platform != "kubernetes" {
						continue // Cluster API workload clusters are Kubernetes
					}
					in := renderInput(m, mode, platform, windowsBuilds[release], source)
					name := fmt.Sprintf("%s/%s/%s/%s", mode, platform, release, source)
					cases = append(cases, renderCase{name: name, in: in, negative: len(cases) == 0})
				}
			}
		}
	}
	return cases
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// subnetFiles are the files kube-proxy's service writes on the host from
// the plan's pod network settings once the Node has subnet (none in the
// external mode).
func subnetFiles(r *plan.Rendered, subnet string) ([]plan.GeneratedFile, error) {
	for _, g := range r.Generated {
		if g.HostPath != plan.PodNetworkPath {
			continue
		}
		p, err := plan.ParsePodNetwork(g.Content)
		if err != nil {
			return nil, err
		}
		return p.Files(subnet)
	}
	return nil, nil
}

// renderInput is one combination of the renderer's inputs; in the overlay
// modes, the node's pod subnet is the one subnetFiles completes the pod
// network's files with (the plan never depends on it).
func renderInput(m *payload.Manifest, mode, platform, build, source string) plan.RenderInput {
	in := plan.RenderInput{
		Cluster: plan.ClusterFacts{
			Server: "https://10.0.0.1:6443", CAData: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
			ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local",
			BootstrapKubeconfig: plan.DigestOf([]byte("bootstrap kubeconfig")),
		},
		Host: plan.HostFacts{
			Info: &plan.Info{
				SchemaVersion: plan.SchemaVersion, Hostname: "WIN-CONTRACT1", IPv4: []string{"10.0.0.5"}, DefaultIPv4: "10.0.0.5",
				OS:         plan.OSInfo{ProductName: "Windows Server Datacenter", Build: build},
				Containerd: plan.ServiceInfo{Present: true, Running: true, State: "Running"},
			},
			Address: "10.0.0.5",
		},
		Payload:         withHybridOverlay(m),
		OperatorVersion: "contract",
		// windows_exporter's TLS files (the operator's, from its metrics
		// CA): the renderer needs only a certificate and the key's digest.
		Metrics: &plan.MetricsFacts{CertPEM: []byte("-----BEGIN CERTIFICATE-----\nMIID\n-----END CERTIFICATE-----\n"),
			Key: plan.DigestOf([]byte("windows_exporter key"))},
	}
	if platform == "openshift" {
		in.Cluster.KubeletCAData = []byte("-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n")
		in.Cluster.CloudProvider = "external"
		in.Cluster.PlatformClusterID = "contract"
	}
	if source == "workload" {
		// A node of a Cluster API workload cluster: windows_exporter
		// serves with the kubelet's serving certificate, certificate and
		// key in one file (contract.sh puts the test pair there).
		in.Metrics = &plan.MetricsFacts{KubeletServing: true}
	}
	if source == "machine" {
		in.Host.ProviderID = "aws:///us-east-1a/i-0123456789abcdef0"
	} else {
		// The host-added cases run containerd winnode manages (its
		// service command line and configuration are checked too), with
		// a registry and a proxy; the Machine API's rely on the host's
		// own.
		in.Host.Info.Containerd = plan.ServiceInfo{}
		in.Runtime = plan.RuntimeFacts{Mode: plan.RuntimeManaged, Registries: []plan.RegistryHosts{{
			Host: "docker.io", Server: plan.RegistryHost{URL: "https://registry-1.docker.io"},
			Mirrors: []plan.RegistryHost{{URL: "https://mirror.example.com:5000", Capabilities: []string{"pull", "resolve"}}},
		}}}
		in.Proxy = plan.ProxyFacts{HTTPProxy: "http://proxy.example.com:3128", HTTPSProxy: "http://proxy.example.com:3128", NoProxy: ".example.com"}
	}
	switch mode {
	case plan.NetworkFlannel:
		in.Network = plan.NetworkFacts{Mode: mode, ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12",
			PodCIDR: "10.244.3.0/24", NetworkName: "vxlan0", VNI: 4096, Port: 4789}
	case plan.NetworkOVNHybrid:
		in.Network = plan.NetworkFacts{Mode: mode, ClusterCIDR: "10.132.0.0/14", ServiceCIDR: "172.30.0.0/16",
			PodCIDR: "10.132.2.0/24", NetworkName: plan.HybridOverlayNetwork}
	default:
		in.Network = plan.NetworkFacts{Mode: mode}
	}
	return in
}

// withHybridOverlay is the manifest with hybrid-overlay-node.exe, an input
// file a payload built here usually lacks, so that ovn-hybrid plans render
// (their other command lines are checked all the same; the Wine tier checks
// hybrid-overlay-node's only when the payload has the program).
func withHybridOverlay(m *payload.Manifest) *payload.Manifest {
	if _, ok := m.Lookup(plan.PayloadHybridOverlay); ok {
		return m
	}
	c := *m
	c.Files = append(slices.Clone(m.Files), payload.File{Name: plan.PayloadHybridOverlay, HostPath: `C:\k\hybrid-overlay-node.exe`,
		SHA256: strings.Repeat("0", 64), Size: 1, Version: "absent"})
	return &c
}

// bootstrapCase runs the agent's bootstrap in a dry run on a worker
// Ignition fixture, on a folder standing for the host's C:\ (the dry run
// only reads the kubelet binary there), and records the kubelet service and
// its configuration.
func bootstrapCase(w *writer, fixture string) error {
	data, err := os.ReadFile(fixture)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "contract-bootstrap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	if err := os.MkdirAll(filepath.Join(root, "k"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "k", "kubelet.exe"), []byte("kubelet"), 0o644); err != nil {
		return err
	}
	wrapper := filepath.Join(root, "winnode-service.exe")
	if err := os.WriteFile(wrapper, []byte("winnode-service"), 0o644); err != nil {
		return err
	}
	a := &agent.Agent{Platform: agent.NewSimulated(nil, root)}
	o := agent.BootstrapOptions{Ignition: data, KubeletPath: `C:\k\kubelet.exe`, NodeIP: "10.0.0.5", ClusterDNS: "172.30.0.10", DryRun: true, WrapperFile: wrapper}
	doc, err := a.Bootstrap(context.Background(), o)
	if err != nil {
		return err
	}
	name := "bootstrap/" + filepath.Base(fixture)
	for _, s := range doc.Plan.Services {
		w.service(name+"/"+s.Name, s)
	}
	kubeletYAML, err := bootstrapKubeletConfig(data, o)
	if err != nil {
		return err
	}
	// The dry run names its files by hash, never by content: the
	// configuration made here must be the one the agent writes.
	want := plan.DigestOf(kubeletYAML)
	for _, f := range doc.Files {
		if strings.EqualFold(f.Path, `C:\k\kubelet.yaml`) {
			if f.SHA256 != want.SHA256 {
				return errors.New(`the kubelet configuration made here differs from the one the agent's bootstrap writes (internal/agent bootstrap.go generateFiles): update bootstrapKubeletConfig`)
			}
			w.config(name, f.Path, kubeletYAML)
			return nil
		}
	}
	return errors.New(`the bootstrap dry run writes no C:\k\kubelet.yaml`)
}

// bootstrapKubeletConfig is the KubeletConfiguration the agent's bootstrap
// writes for these options (internal/agent bootstrap.go generateFiles).
func bootstrapKubeletConfig(ign []byte, o agent.BootstrapOptions) ([]byte, error) {
	cfg, err := ignition.Parse(ign)
	if err != nil {
		return nil, err
	}
	worker, err := cfg.Worker()
	if err != nil {
		return nil, err
	}
	kc, err := plan.KubeletConfig(plan.KubeletConfigOptions{ClientCAFile: `C:\k\kubelet-ca.crt`, ClusterDNS: strings.Split(o.ClusterDNS, ","), Verbosity: worker.Verbosity})
	if err != nil {
		return nil, err
	}
	return plan.KubeletConfigYAML(kc)
}

// writer collects distinct command lines and files with the cases using
// each, and writes them.
type writer struct {
	out     string
	entries map[string]*entry // by folder and content hash
	order   []string
	files   map[string][]byte // negative cases and the like, by path in out
	cases   int
}

type entry struct {
	dir, ext string
	content  []byte
	cases    []string
}

func newWriter(out string) *writer {
	return &writer{out: out, entries: map[string]*entry{}, files: map[string][]byte{}}
}

func (w *writer) add(dir, ext, caseName string, content []byte) {
	sum := sha256.Sum256(content)
	key := dir + "/" + hex.EncodeToString(sum[:])
	e, ok := w.entries[key]
	if !ok {
		e = &entry{dir: dir, ext: ext, content: content}
		w.entries[key] = e
		w.order = append(w.order, key)
	}
	e.cases = append(e.cases, caseName)
}

// commandLine is a service's binary and arguments, NUL-separated.
func commandLine(s plan.Service) []byte {
	return []byte(strings.Join(append([]string{s.Binary}, s.Args...), "\x00"))
}

func (w *writer) service(caseName string, s plan.Service) {
	w.add("services", ".cmd", caseName, commandLine(s))
}

// configKinds are the generated files a real program's own code checks, by
// host path: the kubelet's and kube-proxy's configurations, and the CNI
// configuration containerd's CRI plugin loads with libcni, and containerd's
// own configuration.
var configKinds = map[string]string{
	strings.ToLower(plan.KubeletConfigPath):    "kubelet",
	strings.ToLower(plan.KubeProxyConfigPath):  "kube-proxy",
	strings.ToLower(plan.CNIConfPath):          "cni",
	strings.ToLower(plan.ContainerdConfigPath): "containerd",
	// windows_exporter's web configuration, loaded by the real
	// windows_exporter.exe serving TLS under Wine (contract.sh).
	strings.ToLower(plan.WindowsExporterWebConfigPath): "windows_exporter",
}

func (w *writer) config(caseName, hostPath string, content []byte) {
	if kind, ok := configKinds[strings.ToLower(hostPath)]; ok {
		w.add(filepath.Join("configs", kind), filepath.Ext(strings.ReplaceAll(hostPath, `\`, "/")), caseName+" "+hostPath, content)
	}
}

// negative is the first case's kubelet command line with a flag Kubernetes
// removed in v1.26 put back, as it was before winnode dropped it: the check
// must fail on it with the real kubelet's own words.
func (w *writer) negative(p *plan.Plan) error {
	s, ok := p.Service(plan.KubeletService)
	if !ok {
		return errors.New("the first case has no kubelet service")
	}
	bad := *s
	bad.Args = append(slices.Clone(s.Args), "--logtostderr=false")
	w.files[filepath.Join("negative", "kubelet-logtostderr.cmd")] = commandLine(bad)
	// csi-proxy parses with Go's flag package, which refuses an unknown
	// flag ("flag provided but not defined"): a plausible misspelling.
	csi, ok := p.Service(plan.CSIProxyService)
	if !ok {
		return errors.New("the first case has no csi-proxy service")
	}
	bad = *csi
	bad.Args = append(slices.Clone(csi.Args), "-kubelet-dir", `C:\var\lib\kubelet`)
	w.files[filepath.Join("negative", "csi-proxy-unknown.cmd")] = commandLine(bad)
	// windows_exporter parses with kingpin, which refuses an unknown long
	// flag: a shortened --web.listen-address.
	exporter, ok := p.Service(plan.WindowsExporterService)
	if !ok {
		return errors.New("the first case has no windows_exporter service")
	}
	bad = *exporter
	bad.Args = append(slices.Clone(exporter.Args), "--web.listen=:9182")
	w.files[filepath.Join("negative", "windows_exporter-unknown.cmd")] = commandLine(bad)
	return nil
}

func (w *writer) flush() error {
	counts := map[string]int{}
	for _, key := range w.order {
		e := w.entries[key]
		counts[e.dir]++
		base := filepath.Join(w.out, e.dir, fmt.Sprintf("%03d%s", counts[e.dir], e.ext))
		if err := writeFile(base, e.content); err != nil {
			return err
		}
		if err := writeFile(base+".cases", []byte(strings.Join(e.cases, "\n")+"\n")); err != nil {
			return err
		}
	}
	for path, content := range w.files {
		if err := writeFile(filepath.Join(w.out, path), content); err != nil {
			return err
		}
	}
	fmt.Printf("contract: %d cases; %d distinct service command lines, %d distinct configuration files, in %s\n",
		w.cases, counts["services"], len(w.order)-counts["services"], w.out)
	return nil
}

// exporterTLS writes a serving certificate for 127.0.0.1 and its key
// (windows_exporter-tls/tls.crt, tls.key), which contract.sh installs where
// the web configuration names them before the real windows_exporter.exe
// serves with them (the operator's two files, and the kubelet's one file
// holding both); the certificate verifies itself (client-go's self-signed
// pair carries its CA).
func exporterTLS(w *writer) error {
	cert, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return fmt.Errorf("windows_exporter's test certificate: %w", err)
	}
	w.files[filepath.Join("windows_exporter-tls", "tls.crt")] = cert
	w.files[filepath.Join("windows_exporter-tls", "tls.key")] = key
	return nil
}

func writeFile(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, content, 0o644)
}
