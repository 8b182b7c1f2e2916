package plan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/testkit"
)

// The generated network configurations are golden files: a change to one
// is a change of what every Windows node runs, reviewed as such.
func TestNetworkConfigGolden(t *testing.T) {
	r, err := Render(renderInput())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	for golden, got := range map[string][]byte{
		"cni-win-overlay.golden.conf":  subnetFile(t, r, "10.244.3.0/24", CNIConfPath),
		"flannel-net-conf.golden.json": findGenerated(t, r, FlannelNetConfPath),
		"pod-network.golden.json":      findGenerated(t, r, PodNetworkPath),
	} {
		testkit.Golden(t, golden, got)
		if !json.Valid(got) {
			t.Errorf("%s is not JSON", golden)
		}
	}
}

// subnetFile is one of the files the host writes from the plan's pod
// network settings once its Node has the subnet (PodNetwork.Files).
func subnetFile(t *testing.T, r *Rendered, subnet, path string) []byte {
	t.Helper()
	p, err := ParsePodNetwork(findGenerated(t, r, PodNetworkPath))
	if err != nil {
		t.Fatal(err)
	}
	files, err := p.Files(subnet)
	if err != nil {
		t.Fatalf("the pod network files for %s: %v", subnet, err)
	}
	for _, f := range files {
		if f.HostPath == path {
			return f.Content
		}
	}
	t.Fatalf("no file %s among the pod network's", path)
	return nil
}

func TestFlannelServices(t *testing.T) {
	r, err := Render(renderInput())
	if err != nil {
		t.Fatal(err)
	}
	flanneld := findService(t, r.Plan, FlanneldService)
	if flanneld.Binary != `C:\k\winnode-service.exe` || flanneld.Args[0] != "--name" || !slices.Contains(flanneld.Args, `C:\k\flanneld.exe`) {
		t.Errorf("flanneld does not run through winnode-service.exe: %s %v", flanneld.Binary, flanneld.Args)
	}
	if flanneld.Environment["NODE_NAME"] != "win-abc123" || !slices.Contains(flanneld.Uses, `C:\k\flanneld.exe`) {
		t.Errorf("flanneld: environment %v, uses %v", flanneld.Environment, flanneld.Uses)
	}
	// flanneld starts once the node has joined and has its subnet: it
	// exits without the node's credentials.
	if i := slices.Index(flanneld.Args, "--before"); i < 0 || flanneld.Args[i+1] != `C:\k\winnode-agent.exe` || !slices.Contains(flanneld.Args, "--"+PodNetworkWaitOnly) || len(flanneld.Writes) != 0 {
		t.Errorf("flanneld does not wait for the node's subnet before it starts: %v (writes %v)", flanneld.Args, flanneld.Writes)
	}
	proxy := findService(t, r.Plan, KubeProxyService)
	checkOverlayProxy(t, r, "10.244.3.0/24", "vxlan0", "10.244.3.2", "10.244.0.0/16")
	if !slices.Contains(proxy.Dependencies, FlanneldService) || !slices.Contains(flanneld.Dependencies, KubeletService) {
		t.Errorf("start order: kube-proxy after %v, flanneld after %v", proxy.Dependencies, flanneld.Dependencies)
	}
	conf := string(subnetFile(t, r, "10.244.3.0/24", CNIConfPath))
	if !strings.Contains(conf, `"rangeStart": "10.244.3.3"`) || !strings.Contains(conf, `"subnet": "10.244.3.0/24"`) {
		t.Errorf("the CNI configuration's IPAM does not keep .1 and .2 (gateway, source VIP) out of the pods' range:\n%s", conf)
	}
}

// The plan is the same before the Node has its subnet and after: what
// depends on it is written on the host, by kube-proxy's service, never by
// the plan, so a first configuration applies once.
func TestFlannelPlanWithoutThePodCIDR(t *testing.T) {
	checkPlanWithoutSubnet(t, renderInput())
}

// checkPlanWithoutSubnet: in's plan, rendered without the node's subnet,
// is the plan rendered with it; it generates no file of SubnetFiles, and
// kube-proxy's service writes them.
func checkPlanWithoutSubnet(t *testing.T, in RenderInput) {
	t.Helper()
	with, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Network.PodCIDR = ""
	without, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(with.JSON, without.JSON) {
		t.Errorf("the plan differs once the Node has its subnet: %s, %s", without.Plan.Version, with.Plan.Version)
	}
	for _, g := range without.Generated {
		if slices.Contains(SubnetFiles, g.HostPath) {
			t.Errorf("the plan generates %s, which depends on the node's subnet", g.HostPath)
		}
	}
	if proxy := findService(t, without.Plan, KubeProxyService); !slices.Equal(proxy.Writes, SubnetFiles) {
		t.Errorf("kube-proxy writes %v, want %v", proxy.Writes, SubnetFiles)
	}
}

// The host refuses to write the pod network's files for a subnet the
// network cannot use, naming the node.
func TestPodNetworkFilesRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		in     RenderInput
		subnet string
		want   string
	}{
		"none":                       {renderInput(), "", "no pod subnet"},
		"IPv6":                       {renderInput(), "fd00::/64", "not an IPv4 subnet"},
		"tiny":                       {renderInput(), "10.244.3.0/30", "not an IPv4 subnet"},
		"outside the hybrid network": {hybridInput(), "10.244.2.0/24", "not inside the hybrid cluster CIDR"},
	} {
		r, err := Render(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParsePodNetwork(findGenerated(t, r, PodNetworkPath))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Files(tc.subnet); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

func TestParsePodNetworkRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"not JSON":     {`{`, "is not winnode's pod network settings"},
		"unknown key":  {`{"nodeName":"n","network":{"mode":"flannel"},"subnet":"x"}`, "unknown field"},
		"no node":      {`{"network":{"mode":"flannel"}}`, "names no node"},
		"external":     {`{"nodeName":"n","network":{"mode":"external"}}`, "no pod subnet to wait for"},
		"a pod subnet": {`{"nodeName":"n","network":{"mode":"flannel","podCIDR":"10.244.1.0/24"}}`, "it comes from the Node"},
	} {
		if _, err := ParsePodNetwork([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

// FuzzParsePodNetwork: settings the parser accepts never make Files panic.
func FuzzParsePodNetwork(f *testing.F) {
	f.Add([]byte(`{"nodeName":"n","network":{"mode":"flannel","clusterCIDR":"10.244.0.0/16","serviceCIDR":"10.96.0.0/12","networkName":"vxlan0","vni":4096,"port":4789}}`), "10.244.1.0/24")
	f.Add([]byte(`{"nodeName":"n","network":{"mode":"ovn-hybrid","clusterCIDR":"10.132.0.0/14","serviceCIDR":"172.30.0.0/16","networkName":"OVNKubernetesHybridOverlayNetwork"}}`), "10.132.2.0/24")
	f.Fuzz(func(t *testing.T, data []byte, subnet string) {
		p, err := ParsePodNetwork(data)
		if err != nil {
			return
		}
		if files, err := p.Files(subnet); err == nil && len(files) != len(SubnetFiles) {
			t.Errorf("%d files, want %d", len(files), len(SubnetFiles))
		}
	})
}

func TestExternalNetworkRunsNoNetworkProgram(t *testing.T) {
	in := renderInput()
	in.Network = NetworkFacts{Mode: NetworkExternal}
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if names := serviceNames(r.Plan); !slices.Equal(names, []string{KubeletService, CSIProxyService}) {
		t.Errorf("services %v, want the kubelet and the CSI proxy only", names)
	}
	var dirs []string
	for _, d := range r.Plan.Directories {
		dirs = append(dirs, d.Path)
	}
	if !slices.Contains(dirs, CNIConfDir) || !slices.Contains(dirs, CNIBinDir) {
		t.Errorf("the CNI folders are not prepared: %v", dirs)
	}
}

func TestNetworkFactsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*NetworkFacts)
		want   string
	}{
		"no mode":                   {func(n *NetworkFacts) { n.Mode = "" }, "is not one of flannel"},
		"linux VNI":                 {func(n *NetworkFacts) { n.VNI, n.Port = 1, 8472 }, "VNI 1 and port 8472 do not work on Windows"},
		"bad cluster":               {func(n *NetworkFacts) { n.ClusterCIDR = "10.244.0.0" }, "cluster CIDR"},
		"IPv6 pod CIDR":             {func(n *NetworkFacts) { n.PodCIDR = "fd00::/64" }, "not an IPv4 subnet"},
		"tiny pod CIDR":             {func(n *NetworkFacts) { n.PodCIDR = "10.244.3.0/30" }, "not an IPv4 subnet"},
		"no network name":           {func(n *NetworkFacts) { n.NetworkName = "" }, "no VXLAN network name"},
		"ovn-hybrid, flannel facts": {func(n *NetworkFacts) { n.Mode = NetworkOVNHybrid }, "ovn-hybrid: the network is OVNKubernetesHybridOverlayNetwork"},
	} {
		in := renderInput()
		tc.mutate(&in.Network)
		if _, err := Render(in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	in := renderInput()
	in.Payload.Files = in.Payload.Files[:3] // no flanneld.exe
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "flanneld.exe") {
		t.Errorf("flannel without flanneld.exe in the payload: %v", err)
	}
}

func findService(t *testing.T, p *Plan, name string) Service {
	t.Helper()
	for _, s := range p.Services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no service %s in %v", name, serviceNames(p))
	return Service{}
}

func serviceNames(p *Plan) []string {
	var names []string
	for _, s := range p.Services {
		names = append(names, s.Name)
	}
	return names
}

// checkOverlayProxy: kube-proxy runs through winnode-service with only
// --config, and its KubeProxyConfiguration (read strictly, so no field is
// misspelt) has the overlay's settings.
func checkOverlayProxy(t *testing.T, r *Rendered, subnet, network, sourceVIP, clusterCIDR string) {
	t.Helper()
	proxy := findService(t, r.Plan, KubeProxyService)
	want := []string{"--name", "kube-proxy", "--log-file", KubeProxyLogFile, "--log-file-size", "100M", "--log-file-age", "168h0m0s",
		"--before", `C:\k\winnode-agent.exe`, "--before-arg", PodNetworkCommand, "--before-arg", "--config=" + PodNetworkPath,
		"--", `C:\k\kube-proxy.exe`, "--config=" + KubeProxyConfigPath}
	if proxy.Binary != `C:\k\winnode-service.exe` || !slices.Equal(proxy.Args, want) || !slices.Contains(proxy.Uses, PodNetworkPath) {
		t.Errorf("kube-proxy: %s %v (uses %v), want winnode-service.exe with %v", proxy.Binary, proxy.Args, proxy.Uses, want)
	}
	var c kubeproxyv1alpha1.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict(subnetFile(t, r, subnet, KubeProxyConfigPath), &c); err != nil {
		t.Fatalf("%s: %v", KubeProxyConfigPath, err)
	}
	if c.Kind != "KubeProxyConfiguration" || c.APIVersion != "kubeproxy.config.k8s.io/v1alpha1" || c.Mode != "kernelspace" ||
		c.Winkernel.NetworkName != network || c.Winkernel.SourceVip != sourceVIP || c.Winkernel.EnableDSR ||
		c.ClusterCIDR != clusterCIDR || c.ClientConnection.Kubeconfig != KubeconfigPath || c.HostnameOverride != "win-abc123" {
		t.Errorf("kube-proxy configuration %+v, want kernelspace on %s, source VIP %s, cluster CIDR %s, no DSR", c, network, sourceVIP, clusterCIDR)
	}
}

// What each network mode's services run before their program, at each
// start (winnode-service.exe's --before): the overlay program (flanneld,
// hybrid-overlay-node), which exits without the node's credentials and
// its Node, waits for the Node's pod subnet and writes nothing;
// kube-proxy's service waits for it and writes the files that depend on
// it; every other service runs its program at once.
func TestServicesWaitForThePodSubnet(t *testing.T) {
	waitOnly := []string{`C:\k\winnode-agent.exe`, PodNetworkCommand, "--config=" + PodNetworkPath, "--" + PodNetworkWaitOnly}
	writes := []string{`C:\k\winnode-agent.exe`, PodNetworkCommand, "--config=" + PodNetworkPath}
	external := renderInput()
	external.Network = NetworkFacts{Mode: NetworkExternal}
	for _, tc := range []struct {
		name   string
		in     RenderInput
		before map[string][]string // by service; nil: runs its program at once
	}{
		{"flannel", renderInput(), map[string][]string{FlanneldService: waitOnly, KubeProxyService: writes}},
		{"ovn-hybrid", hybridInput(), map[string][]string{HybridOverlayService: waitOnly, KubeProxyService: writes}},
		{"external", external, nil},
	} {
		r, err := Render(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, s := range r.Plan.Services {
			var before []string
			if s.Binary == `C:\k\winnode-service.exe` {
				before = beforeOf(s.Args)
			}
			if !slices.Equal(before, tc.before[s.Name]) {
				t.Errorf("%s: service %s runs %q before its program, want %q", tc.name, s.Name, before, tc.before[s.Name])
			}
		}
		for name := range tc.before {
			findService(t, r.Plan, name)
		}
	}
}

// beforeOf is the program and arguments winnode-service.exe's arguments
// args run before the service's program (--before, --before-arg: each of
// its flags before "--" takes a value; internal/svcwrap parses them, but
// imports this package's simulator through simscm).
func beforeOf(args []string) []string {
	var before []string
	for i := 0; i+1 < len(args) && args[i] != "--"; i += 2 {
		if args[i] == "--before" || args[i] == "--before-arg" {
			before = append(before, args[i+1])
		}
	}
	return before
}
