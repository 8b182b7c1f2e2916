package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/winpath"
)

// Where a rendered plan puts things on the host. The payload's own files go
// where its manifest says (HostPath); these are the files the operator
// generates and the folders the plan owns.
const (
	KDir                    = `C:\k`
	KubeletConfigPath       = `C:\k\kubelet.yaml`
	BootstrapKubeconfigPath = `C:\k\bootstrap-kubeconfig`
	// KubeconfigPath is written by the kubelet itself after its TLS
	// bootstrap (it holds the node's client certificate); kube-proxy reads
	// it too. It is not a plan file.
	KubeconfigPath = `C:\k\kubeconfig`
	ClusterCAPath  = `C:\k\ca.crt`
	// KubeletCAPath holds the CA of the kubelet API's clients where the
	// cluster names one apart from the cluster CA (OpenShift's kubelet CA).
	KubeletCAPath = `C:\k\kubelet-ca.crt`
	// KubeProxyConfigPath is kube-proxy's KubeProxyConfiguration (--config).
	KubeProxyConfigPath = `C:\k\kube-proxy.yaml`
	KubeletStateDir     = `C:\var\lib\kubelet`
	KubeletCertDir      = `C:\var\lib\kubelet\pki`
	KubeletService      = "kubelet"
	KubeProxyService    = "kube-proxy"
	// ContainerdService is the container runtime's service: winnode's own
	// (RuntimeManaged) or the host's, which the plan relies on and never
	// manages (RuntimeExisting).
	ContainerdService = "containerd"
	// TrustedCAPath holds the cluster proxy's CA bundle, which apply adds
	// to the machine's Trusted Root store (Plan.RootCertificates).
	TrustedCAPath = `C:\k\trusted-ca.pem`
)

// Payload entries the renderer needs by name.
const (
	PayloadAgent     = "winnode-agent.exe"
	PayloadKubelet   = "kubelet.exe"
	PayloadKubeProxy = "kube-proxy.exe"
)

// WindowsTaint is the taint every Windows node registers with, so that
// Linux pods stay off.
const WindowsTaint = "os=Windows:NoSchedule"

// ClusterFacts are what the renderer needs to know about the cluster.
type ClusterFacts struct {
	// Server is the API server URL the kubelet bootstraps against (only
	// recorded in the bootstrap kubeconfig, whose hash is below).
	Server string
	// CAData is the cluster CA bundle (PEM): written to ClusterCAPath and
	// used by the kubelet to authenticate the API server's client
	// certificate.
	CAData []byte
	// ClusterDNS are the cluster DNS service IPs; ClusterDomain defaults to
	// cluster.local.
	ClusterDNS    []string
	ClusterDomain string
	// BootstrapKubeconfig describes the bootstrap kubeconfig the kubelet
	// starts with. It holds a token, so the renderer never sees its content:
	// the caller renders it (internal/bootstrap), uploads it, and passes its
	// hash and size here (or, when the host's kubelet already has its
	// certificate, the hash of the one already installed).
	BootstrapKubeconfig FileDigest
	// KubeletCAData, when set, is the CA of the kubelet API's clients
	// (written to KubeletCAPath, the kubelet's clientCAFile); else the
	// cluster CA is (OpenShift's ControllerConfig names its own).
	KubeletCAData []byte
	// CloudProvider is the kubelet's --cloud-provider ("" or "external"),
	// as the cluster's Linux kubelets have it.
	CloudProvider string
	// PlatformClusterID is the cluster's own identity where the platform
	// keeps one (OpenShift: ClusterVersion's spec.clusterID): the plan's
	// cluster ID is then derived from it alone, so that rotating the API
	// server's CA bundle or moving its URL does not look like another
	// cluster (which would drop every kubelet's credentials).
	PlatformClusterID string
}

// ID is the plan's cluster ID for these facts: from PlatformClusterID when
// the platform has one, else from the API server's URL and CA (ClusterID).
func (c ClusterFacts) ID() string {
	if c.PlatformClusterID != "" {
		h := sha256.Sum256([]byte("platform\x00" + c.PlatformClusterID))
		return hex.EncodeToString(h[:])[:16]
	}
	return ClusterID(c.Server, c.CAData)
}

// ClusterID names a cluster by its API server address and CA: a host
// listed in another cluster gets another ID, and its agent drops the old
// cluster's kubelet credentials.
func ClusterID(server string, caData []byte) string {
	h := sha256.New()
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write(caData)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// FileDigest names a file's content by hash.
type FileDigest struct {
	SHA256 string
	Size   int64
}

// DigestOf is the FileDigest of content.
func DigestOf(content []byte) FileDigest {
	sum := sha256.Sum256(content)
	return FileDigest{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}
}

// HostFacts are what the renderer needs to know about the host: the agent's
// Info, and the address the operator reaches it on.
type HostFacts struct {
	Info *Info
	// Address is the WindowsInstance's spec.address; when it is one of the
	// host's IPv4 addresses the kubelet uses it as its node IP.
	Address string
	// ProviderID is the WindowsInstance's spec.providerID: the Node's
	// spec.providerID, registered by the kubelet ("": none).
	ProviderID string
}

// NodeName is the name the host's kubelet registers: its hostname,
// lower-cased (what the kubelet itself does with the hostname).
func NodeName(hostname string) string { return strings.ToLower(hostname) }

// RenderInput is everything a plan depends on.
type RenderInput struct {
	Cluster ClusterFacts
	Host    HostFacts
	Payload *payload.Manifest
	// Network is the pod network: the mode, and what that mode needs.
	Network NetworkFacts
	// Runtime is the container runtime: who runs it, and how winnode
	// configures it when winnode does (containerd.go).
	Runtime RuntimeFacts
	// Proxy is the cluster-wide proxy, set in every winnode service's
	// environment (proxy.go).
	Proxy ProxyFacts
	// TrustedCA is the PEM bundle of CAs the cluster's proxy needs
	// trusted, added to the machine's Trusted Root store ("": none).
	TrustedCA []byte
	// OperatorVersion is the winnode version doing the rendering; it is part
	// of Plan.Version, so a new operator version reconfigures every host.
	OperatorVersion string
	// Logs are the rotation limits of every service's log (the operator's
	// --log-file-size and --log-file-age); nil: logrotate.Defaults.
	Logs *logrotate.Limits
	// Metrics, when set, installs windows_exporter with these TLS files
	// (windowsexporter.go); nil: no node metrics (a caller with no metrics
	// CA, winnodectl add).
	Metrics *MetricsFacts
}

// Rendered is a plan and the generated files it names that the operator
// must upload (the payload's files are uploaded from the payload folder; the
// bootstrap kubeconfig by the caller, who holds its content).
type Rendered struct {
	Plan *Plan
	// JSON is the plan as uploaded to the host: same input, same bytes.
	JSON []byte
	// Generated are files whose content the renderer produced (kubelet
	// configuration, cluster CA), by host path.
	Generated []GeneratedFile
}

// GeneratedFile is one generated plan file with its content.
type GeneratedFile struct {
	HostPath string
	Content  []byte
}

// Render is the pure function from cluster facts, host facts, payload
// manifest and operator version to the plan for one host. Same input, same
// bytes (Rendered.JSON); nothing it reads comes from the clock or the
// environment.
func Render(in RenderInput) (*Rendered, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	wrap := func(err error) error {
		return fmt.Errorf("rendering the plan for host %s: %w", in.Host.Info.Hostname, err)
	}
	generated, err := in.generatedFiles()
	if err != nil {
		return nil, wrap(err)
	}
	services := in.services()
	p := &Plan{
		SchemaVersion:   SchemaVersion,
		StagingDir:      DefaultStagingDir,
		Directories:     append(in.directories(), logDirs(services)...),
		HostServices:    in.hostServices(),
		WindowsFeatures: in.windowsFeatures(),
		Cluster:         in.Cluster.ID(),
		// What the kubelet writes once joined: only valid in this cluster.
		ClusterCredentials: []string{KubeconfigPath, KubeletCertDir},
		Files:              in.files(generated),
		Services:           services,
		FirewallPorts:      in.firewallPorts(),
		Checks: []Check{
			{Type: CheckServiceRunning, Service: KubeletService},
			{Type: CheckFileExists, Path: KubeletConfigPath},
		},
	}
	for _, f := range p.Files {
		if f.Encoding != "" {
			p.SchemaVersion = SchemaVersionEncoded
		}
	}
	p.DefenderExclusions = defenderExclusions(p)
	if len(in.TrustedCA) > 0 {
		p.RootCertificates = []string{TrustedCAPath}
	}
	out, err := in.seal(p)
	if err != nil {
		return nil, wrap(err)
	}
	return &Rendered{Plan: p, JSON: out, Generated: generated}, nil
}

// generatedFiles are the files the operator writes: the cluster CA and the
// kubelet's configuration.
func (in RenderInput) generatedFiles() ([]GeneratedFile, error) {
	clientCA := ClusterCAPath
	if len(in.Cluster.KubeletCAData) > 0 {
		clientCA = KubeletCAPath
	}
	kc, err := KubeletConfig(KubeletConfigOptions{
		ClientCAFile:  clientCA,
		ClusterDNS:    in.Cluster.ClusterDNS,
		ClusterDomain: in.Cluster.ClusterDomain,
		ProviderID:    in.Host.ProviderID,
	})
	if err != nil {
		return nil, err
	}
	kubeletYAML, err := KubeletConfigYAML(kc)
	if err != nil {
		return nil, err
	}
	network, err := in.networkFiles()
	if err != nil {
		return nil, err
	}
	files := []GeneratedFile{
		{HostPath: ClusterCAPath, Content: in.Cluster.CAData},
		{HostPath: KubeletConfigPath, Content: kubeletYAML},
	}
	runtime, err := in.containerdFiles()
	if err != nil {
		return nil, err
	}
	files = append(files, runtime...)
	exporter, err := in.windowsExporterFiles()
	if err != nil {
		return nil, err
	}
	files = append(files, exporter...)
	if len(in.TrustedCA) > 0 {
		files = append(files, GeneratedFile{HostPath: TrustedCAPath, Content: in.TrustedCA})
	}
	if len(in.Cluster.KubeletCAData) > 0 {
		files = append(files, GeneratedFile{HostPath: KubeletCAPath, Content: in.Cluster.KubeletCAData})
	}
	return append(files, network...), nil
}

// directories are the plan's folders: winnode's, the kubelet's, the CNI
// folders containerd reads, flannel's, and hybrid-overlay-node's logs (the
// wrapped services' log folders are added from the services, logDirs).
func (in RenderInput) directories() []Directory {
	dirs := []Directory{
		{Path: KDir},
		{Path: CNIBinDir},
		{Path: CNIConfDir},
		{Path: KubeletStateDir},
	}
	dirs = append(dirs, in.containerdDirectories()...)
	if in.Metrics != nil {
		dirs = append(dirs, Directory{Path: WindowsExporterDir})
	}
	switch in.Network.Mode {
	case NetworkFlannel:
		dirs = append(dirs, Directory{Path: FlannelDir})
	case NetworkOVNHybrid:
		dirs = append(dirs, Directory{Path: HybridOverlayLogDir, Logs: true})
	}
	return dirs
}

// runsKubeProxy: winnode runs kube-proxy on the overlays it sets up
// (flannel, ovn-hybrid), not where the cluster's own Windows DaemonSets do
// (external).
func (in RenderInput) runsKubeProxy() bool {
	return in.Network.Mode == NetworkFlannel || in.Network.Mode == NetworkOVNHybrid
}

// files are the plan's files: the payload's, the generated ones and the
// bootstrap kubeconfig, sorted by path as Windows compares them (a stable
// order).
func (in RenderInput) files(generated []GeneratedFile) []File {
	var files []File
	for _, f := range in.Payload.Files {
		// A payload file travels as the payload has it: compressed
		// (Encoding) or as it is.
		files = append(files, File{Path: f.HostPath, SHA256: f.SHA256, Size: f.Size,
			Encoding: f.Encoding, EncodedSHA256: f.EncodedSHA256, EncodedSize: f.EncodedSize})
	}
	for _, g := range generated {
		d := DigestOf(g.Content)
		files = append(files, File{Path: g.HostPath, SHA256: d.SHA256, Size: d.Size})
	}
	files = append(files, File{Path: BootstrapKubeconfigPath, SHA256: in.Cluster.BootstrapKubeconfig.SHA256, Size: in.Cluster.BootstrapKubeconfig.Size})
	if in.Metrics != nil && !in.Metrics.KubeletServing {
		files = append(files, File{Path: WindowsExporterKeyPath, SHA256: in.Metrics.Key.SHA256, Size: in.Metrics.Key.Size})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(strings.ToLower(a.Path), strings.ToLower(b.Path)) })
	return files
}

// serviceRecovery: Windows restarts a winnode service that exits, after 2,
// 5, then 10 seconds.
var serviceRecovery = Recovery{
	Actions: []RecoveryAction{
		{Type: RecoveryRestart, Delay: metav1.Duration{Duration: 2 * time.Second}},
		{Type: RecoveryRestart, Delay: metav1.Duration{Duration: 5 * time.Second}},
		{Type: RecoveryRestart, Delay: metav1.Duration{Duration: 10 * time.Second}},
	},
	ResetPeriod: metav1.Duration{Duration: 24 * time.Hour},
}

// services are containerd where winnode manages it, the kubelet, what
// the network mode runs beside it (flanneld or hybrid-overlay-node,
// kube-proxy), each started after what it needs, the CSI proxy, and
// windows_exporter where the node's metrics are served.
func (in RenderInput) services() []Service {
	services := append(in.runtimeServices(), in.kubeletService())
	switch in.Network.Mode {
	case NetworkFlannel:
		services = append(services, in.flanneldService())
	case NetworkOVNHybrid:
		services = append(services, in.hybridOverlayService())
	}
	if in.runsKubeProxy() {
		services = append(services, in.kubeProxyService())
	}
	services = append(services, in.csiProxyService())
	if in.Metrics != nil {
		services = append(services, in.windowsExporterService())
	}
	return services
}

// firewallPorts: the kubelet's API, and windows_exporter's where it runs.
func (in RenderInput) firewallPorts() []FirewallPort {
	ports := []FirewallPort{{Name: "kubelet", Protocol: TCP, Port: 10250}}
	if in.Metrics != nil {
		ports = append(ports, FirewallPort{Name: "windows-exporter", Protocol: TCP, Port: WindowsExporterPort})
	}
	return ports
}

// kubeletService runs the kubelet after containerd, through
// winnode-service.exe (wrapped.go says why), its log in KubeletLogFile.
func (in RenderInput) kubeletService() Service {
	info := in.Host.Info
	kubelet, _ := in.Payload.Lookup(PayloadKubelet)
	args := []string{
		"--config=" + KubeletConfigPath,
		"--bootstrap-kubeconfig=" + BootstrapKubeconfigPath,
		"--kubeconfig=" + KubeconfigPath,
		"--cert-dir=" + KubeletCertDir,
		"--hostname-override=" + NodeName(info.Hostname),
		"--register-with-taints=" + WindowsTaint,
		"--v=2",
	}
	if nodeIP := chooseNodeIP(info, in.Host.Address); nodeIP != "" {
		args = append(args, "--node-ip="+nodeIP)
	}
	uses := []string{KubeletConfigPath, BootstrapKubeconfigPath, ClusterCAPath}
	if len(in.Cluster.KubeletCAData) > 0 {
		uses = append(uses, KubeletCAPath)
	}
	// The cloud provider as the Linux workers' kubelets have it (only
	// external: the kubelet of Kubernetes v1.37 has no in-tree cloud
	// provider and no --cloud-config; the external cloud controller
	// manager reads its own configuration).
	if in.Cluster.CloudProvider != "" {
		args = append(args, "--cloud-provider="+in.Cluster.CloudProvider)
	}
	return in.wrap(Service{
		Name:         KubeletService,
		DisplayName:  "Kubernetes kubelet",
		Uses:         uses,
		Dependencies: []string{ContainerdService},
		StartType:    StartAuto,
		Recovery:     serviceRecovery,
		Environment:  in.proxyEnvironment(nil),
	}, kubelet.HostPath, args...)
}

// kubeProxyService runs kube-proxy, through winnode-service.exe
// (wrapped.go), with its KubeProxyConfiguration (kubeproxyconfig.go), after
// the kubelet (whose kubeconfig it reads) and the program that creates the
// overlay network (flanneld or hybrid-overlay-node). Before kube-proxy, at
// each start, winnode-service runs `winnode-agent.exe pod-network`, which
// waits for the Node's pod subnet and writes the files that depend on it
// (podnetwork.go): the CNI configuration and kube-proxy's own.
func (in RenderInput) kubeProxyService() Service {
	proxy, _ := in.Payload.Lookup(PayloadKubeProxy)
	agent, _ := in.Payload.Lookup(PayloadAgent)
	deps := []string{KubeletService}
	switch in.Network.Mode {
	case NetworkFlannel:
		deps = append(deps, FlanneldService)
	case NetworkOVNHybrid:
		deps = append(deps, HybridOverlayService)
	}
	s := in.wrap(Service{
		Name:        KubeProxyService,
		DisplayName: "Kubernetes kube-proxy",
		// A change of the settings restarts it, and so writes the files
		// again. The agent is not among its uses: a new agent restarts
		// nothing (internal/svcwrap).
		Uses:   []string{PodNetworkPath},
		Writes: slices.Clone(SubnetFiles),
		// kube-proxy reads the kubeconfig the kubelet writes after its
		// TLS bootstrap, which pod-network waits for.
		Dependencies: deps,
		StartType:    StartAuto,
		Recovery:     serviceRecovery,
		Environment:  in.proxyEnvironment(nil),
		// Only --config: kube-proxy ignores most flags given with it
		// (cmd/kube-proxy/app/options.go, Complete).
	}, proxy.HostPath, "--config="+KubeProxyConfigPath)
	s.Args = withBefore(s.Args, agent.HostPath, PodNetworkCommand, "--config="+PodNetworkPath)
	return s
}

// flanneldService runs flanneld with the node's credentials (the kubeconfig
// the kubelet writes after its TLS bootstrap: flanneld patches only its own
// Node's annotations, which the node authorizer allows), through
// winnode-service.exe since flanneld cannot answer the service control
// manager itself (wrapped.go).
func (in RenderInput) flanneldService() Service {
	flanneld, _ := in.Payload.Lookup(PayloadFlanneld)
	args := []string{
		// flannel's Documentation/configuration.md and running.md: the
		// node's subnet from its Node (spec.podCIDR) instead of etcd.
		"--kube-subnet-mgr",
		"--kubeconfig-file=" + KubeconfigPath,
		"--net-config-path=" + FlannelNetConfPath,
		"--subnet-file=" + FlannelSubnetFile,
		"--ip-masq=false",
		"--v=2",
	}
	if nodeIP := chooseNodeIP(in.Host.Info, in.Host.Address); nodeIP != "" {
		args = append(args, "--iface="+nodeIP) // the interface that carries VXLAN traffic
	}
	s := in.wrap(Service{
		Name:        FlanneldService,
		DisplayName: "flannel overlay network (flanneld)",
		Uses:        []string{FlannelNetConfPath},
		// flanneld's kube subnet manager finds its Node by NODE_NAME.
		Environment:  in.proxyEnvironment(map[string]string{"NODE_NAME": NodeName(in.Host.Info.Hostname)}),
		Dependencies: []string{KubeletService},
		StartType:    StartAuto,
		Recovery:     serviceRecovery,
	}, flanneld.HostPath, args...)
	// flanneld exits while the kubelet has not written the node's
	// kubeconfig, and Windows starts it again only after its recovery
	// delay: it starts once the Node has its subnet instead, which
	// pod-network waits for (writing nothing).
	agent, _ := in.Payload.Lookup(PayloadAgent)
	s.Args = withBefore(s.Args, agent.HostPath, PodNetworkCommand, "--config="+PodNetworkPath, "--"+PodNetworkWaitOnly)
	return s
}

// seal names the plan's content in its version (the operator version and
// a hash of everything else, so an identical plan has an identical
// version), validates it, and returns the JSON uploaded to the host.
func (in RenderInput) seal(p *Plan) ([]byte, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	p.Version = in.OperatorVersion + "-" + hex.EncodeToString(sum[:])[:12]
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// check refuses input the plan cannot be made from, naming what is missing.
func (in RenderInput) check() error {
	var errs []error
	if in.Host.Info == nil {
		return errors.New("rendering a plan: no host facts (the agent's info)")
	}
	host := in.Host.Info.Hostname
	if host == "" {
		errs = append(errs, errors.New("the agent reported no hostname"))
	}
	if strings.TrimSpace(in.OperatorVersion) == "" {
		errs = append(errs, errors.New("no operator version"))
	}
	if len(in.Cluster.CAData) == 0 {
		errs = append(errs, errors.New("no cluster CA"))
	}
	if d := in.Cluster.BootstrapKubeconfig; d.SHA256 == "" || d.Size <= 0 {
		errs = append(errs, errors.New("no bootstrap kubeconfig digest"))
	}
	if p := in.Cluster.CloudProvider; p != "" && p != "external" {
		errs = append(errs, fmt.Errorf("cloud provider %q: the kubelet has only external (or none)", p))
	}
	if err := in.Network.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, in.Runtime.check()...)
	errs = append(errs, in.Proxy.check()...)
	required := append([]string{PayloadAgent, PayloadService, PayloadKubelet, PayloadKubeProxy, PayloadCSIProxy}, in.runtimePayload()...)
	if in.Metrics != nil {
		required = append(required, PayloadWindowsExporter)
	}
	if err := in.Metrics.check(); err != nil {
		errs = append(errs, err)
	}
	switch in.Network.Mode {
	case NetworkFlannel:
		required = append(required, PayloadFlanneld)
	case NetworkOVNHybrid:
		required = append(required, PayloadHybridOverlay)
	}
	if in.Payload == nil {
		errs = append(errs, errors.New("no payload manifest"))
	} else {
		for _, name := range required {
			f, ok := in.Payload.Lookup(name)
			if !ok {
				errs = append(errs, fmt.Errorf("the payload has no %s (rebuild it with `make payload`)", name))
				continue
			}
			if _, err := winpath.Parse(f.HostPath); err != nil {
				errs = append(errs, fmt.Errorf("payload entry %s: %w", name, err))
			}
		}
		for _, f := range in.Payload.Files {
			for _, gen := range []string{ClusterCAPath, KubeletConfigPath, BootstrapKubeconfigPath, KubeconfigPath, KubeProxyConfigPath, CNIConfPath, FlannelNetConfPath, ContainerdConfigPath, TrustedCAPath, WindowsExporterWebConfigPath, WindowsExporterCertPath, WindowsExporterKeyPath} {
				if strings.EqualFold(f.HostPath, gen) {
					errs = append(errs, fmt.Errorf("payload entry %s is installed at %s, where the operator writes a generated file", f.Name, gen))
				}
			}
		}
	}
	for _, ip := range in.Cluster.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, fmt.Errorf("cluster DNS address %q is not an IP address", ip))
		}
	}
	if in.Logs != nil {
		if err := in.Logs.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("rendering the plan for host %q: %w", host, errors.Join(errs...))
	}
	return nil
}

// chooseNodeIP is the address the operator reaches the host on, when the
// host reports it as its own; else the host's default-route address; else
// none (the kubelet then picks one).
func chooseNodeIP(info *Info, address string) string {
	for _, ip := range info.IPv4 {
		if ip == address {
			return ip
		}
	}
	return info.DefaultIPv4
}

// NodeIP is the address the host's kubelet registers as its InternalIP
// (its --node-ip), "" when the kubelet picks one itself.
func NodeIP(info *Info, address string) string { return chooseNodeIP(info, address) }
