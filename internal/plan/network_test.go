package plan

import (
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
	for path, golden := range map[string]string{
		CNIConfPath:        "cni-win-overlay.golden.conf",
		FlannelNetConfPath: "flannel-net-conf.golden.json",
	} {
		got := findGenerated(t, r, path)
		testkit.Golden(t, golden, got)
		if !json.Valid(got) {
			t.Errorf("%s is not JSON", path)
		}
	}
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
	proxy := findService(t, r.Plan, KubeProxyService)
	checkOverlayProxy(t, r, "vxlan0", "10.244.3.2", "10.244.0.0/16")
	if !slices.Contains(proxy.Dependencies, FlanneldService) || !slices.Contains(flanneld.Dependencies, KubeletService) {
		t.Errorf("start order: kube-proxy after %v, flanneld after %v", proxy.Dependencies, flanneld.Dependencies)
	}
	conf := string(findGenerated(t, r, CNIConfPath))
	if !strings.Contains(conf, `"rangeStart": "10.244.3.3"`) || !strings.Contains(conf, `"subnet": "10.244.3.0/24"`) {
		t.Errorf("the CNI configuration's IPAM does not keep .1 and .2 (gateway, source VIP) out of the pods' range:\n%s", conf)
	}
}

// Before the Node has its subnet, the plan has flanneld but no CNI
// configuration and no kube-proxy: the node cannot be Ready yet.
func TestFlannelBeforeThePodCIDR(t *testing.T) {
	in := renderInput()
	in.Network.PodCIDR = ""
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range r.Generated {
		if g.HostPath == CNIConfPath {
			t.Error("a CNI configuration without the node's subnet")
		}
	}
	if hasService(r.Plan, KubeProxyService) || !hasService(r.Plan, FlanneldService) {
		t.Errorf("services %v, want flanneld and no kube-proxy", serviceNames(r.Plan))
	}
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

func hasService(p *Plan, name string) bool { return slices.Contains(serviceNames(p), name) }

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
func checkOverlayProxy(t *testing.T, r *Rendered, network, sourceVIP, clusterCIDR string) {
	t.Helper()
	proxy := findService(t, r.Plan, KubeProxyService)
	want := []string{"--name", "kube-proxy", "--log-file", KubeProxyLogFile, "--log-file-size", "100M", "--log-file-age", "168h0m0s", "--", `C:\k\kube-proxy.exe`, "--config=" + KubeProxyConfigPath}
	if proxy.Binary != `C:\k\winnode-service.exe` || !slices.Equal(proxy.Args, want) || !slices.Contains(proxy.Uses, KubeProxyConfigPath) {
		t.Errorf("kube-proxy: %s %v (uses %v), want winnode-service.exe with %v", proxy.Binary, proxy.Args, proxy.Uses, want)
	}
	var c kubeproxyv1alpha1.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict(findGenerated(t, r, KubeProxyConfigPath), &c); err != nil {
		t.Fatalf("%s: %v", KubeProxyConfigPath, err)
	}
	if c.Kind != "KubeProxyConfiguration" || c.APIVersion != "kubeproxy.config.k8s.io/v1alpha1" || c.Mode != "kernelspace" ||
		c.Winkernel.NetworkName != network || c.Winkernel.SourceVip != sourceVIP || c.Winkernel.EnableDSR ||
		c.ClusterCIDR != clusterCIDR || c.ClientConnection.Kubeconfig != KubeconfigPath || c.HostnameOverride != "win-abc123" {
		t.Errorf("kube-proxy configuration %+v, want kernelspace on %s, source VIP %s, cluster CIDR %s, no DSR", c, network, sourceVIP, clusterCIDR)
	}
}
