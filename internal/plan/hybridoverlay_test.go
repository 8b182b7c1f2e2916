package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/testkit"
)

// hybridInput is renderInput in ovn-hybrid mode: the payload has
// hybrid-overlay-node.exe (given to the payload build as an input file),
// the node has its hybrid subnet.
func hybridInput() RenderInput {
	in := renderInput()
	in.Payload.Files = append(slices.DeleteFunc(slices.Clone(in.Payload.Files), func(f payload.File) bool { return f.Name == PayloadFlanneld }),
		payload.File{Name: PayloadHybridOverlay, HostPath: `C:\k\hybrid-overlay-node.exe`, SHA256: strings.Repeat("f", 64), Size: 500, Version: "input"})
	in.Network = NetworkFacts{
		Mode: NetworkOVNHybrid, ClusterCIDR: "10.132.0.0/14", ServiceCIDR: "172.30.0.0/16",
		PodCIDR: "10.132.2.0/24", NetworkName: HybridOverlayNetwork,
	}
	return in
}

// The ovn-hybrid plan and its CNI configuration are golden files.
func TestHybridOverlayGolden(t *testing.T) {
	r, err := Render(hybridInput())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	for golden, got := range map[string][]byte{
		"cni-ovn-hybrid.golden.conf":    subnetFile(t, r, "10.132.2.0/24", CNIConfPath),
		"render-ovn-hybrid.golden.json": r.JSON,
	} {
		testkit.Golden(t, golden, got)
	}
	if _, err := Decode(r.JSON); err != nil {
		t.Errorf("the agent's Decode refuses the ovn-hybrid plan: %v", err)
	}
}

func TestHybridOverlayServices(t *testing.T) {
	r, err := Render(hybridInput())
	if err != nil {
		t.Fatal(err)
	}
	if names := serviceNames(r.Plan); !slices.Equal(names, []string{KubeletService, HybridOverlayService, KubeProxyService, CSIProxyService}) {
		t.Errorf("services %v", names)
	}
	ho := findService(t, r.Plan, HybridOverlayService)
	// Through winnode-service.exe, which waits for the Node's subnet
	// first (TestServicesWaitForThePodSubnet), without --windows-service.
	// The default limits, 100M and 168h, as lumberjack takes them: 96
	// megabytes (95.4, rounded up) and 7 days.
	wantArgs := []string{`C:\k\hybrid-overlay-node.exe`, "--node", "win-abc123", "--k8s-kubeconfig", KubeconfigPath, "--logfile", `C:\var\log\hybrid-overlay\hybrid-overlay.log`,
		"--logfile-maxsize", "96", "--logfile-maxage", "7"}
	if i := slices.Index(ho.Args, "--"); ho.Binary != `C:\k\winnode-service.exe` || i < 0 || !slices.Equal(ho.Args[i+1:], wantArgs) ||
		!slices.Contains(ho.Uses, `C:\k\hybrid-overlay-node.exe`) {
		t.Errorf("hybrid-overlay-node: %s %v (uses %v), want winnode-service.exe running %v", ho.Binary, ho.Args, ho.Uses, wantArgs)
	}
	proxy := findService(t, r.Plan, KubeProxyService)
	checkOverlayProxy(t, r, "10.132.2.0/24", "OVNKubernetesHybridOverlayNetwork", "10.132.2.2", "10.132.0.0/14")
	if !slices.Equal(ho.Dependencies, []string{KubeletService}) || !slices.Equal(proxy.Dependencies, []string{KubeletService, HybridOverlayService}) {
		t.Errorf("start order: hybrid-overlay-node after %v, kube-proxy after %v", ho.Dependencies, proxy.Dependencies)
	}
	conf := string(subnetFile(t, r, "10.132.2.0/24", CNIConfPath))
	for _, want := range []string{`"name": "OVNKubernetesHybridOverlayNetwork"`, `"subnet": "10.132.2.0/24"`, `"rangeStart": "10.132.2.3"`, `"10.132.0.0/14"`, `"DestinationPrefix": "172.30.0.0/16"`} {
		if !strings.Contains(conf, want) {
			t.Errorf("the CNI configuration lacks %s:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "endpointMacPrefix") {
		t.Errorf("flannel's endpoint MAC prefix on the hybrid overlay:\n%s", conf)
	}
	var dirs []string
	for _, d := range r.Plan.Directories {
		dirs = append(dirs, d.Path)
	}
	if !slices.Contains(dirs, HybridOverlayLogDir) || !slices.Contains(dirs, LogDir(HybridOverlayService)) || slices.Contains(dirs, FlannelDir) {
		t.Errorf("directories %v", dirs)
	}
}

// The ovn-hybrid plan is the same before the hybrid overlay controller
// gave the Node its subnet and after: hybrid-overlay-node and kube-proxy's
// service wait for it on the host.
func TestHybridOverlayPlanWithoutTheSubnet(t *testing.T) {
	checkPlanWithoutSubnet(t, hybridInput())
}

func TestHybridOverlayFactsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*NetworkFacts)
		want   string
	}{
		"bad cluster CIDR":     {func(n *NetworkFacts) { n.ClusterCIDR = "10.132.0.0" }, `hybrid cluster CIDR "10.132.0.0" is not a CIDR`},
		"bad Service CIDR":     {func(n *NetworkFacts) { n.ServiceCIDR = "" }, "Service CIDR"},
		"subnet outside":       {func(n *NetworkFacts) { n.PodCIDR = "10.244.2.0/24" }, "not inside the hybrid cluster CIDR 10.132.0.0/14"},
		"subnet wider":         {func(n *NetworkFacts) { n.ClusterCIDR, n.PodCIDR = "10.132.0.0/24", "10.132.0.0/23" }, "not inside"},
		"tiny subnet":          {func(n *NetworkFacts) { n.PodCIDR = "10.132.2.0/30" }, "not an IPv4 subnet"},
		"IPv6 subnet":          {func(n *NetworkFacts) { n.PodCIDR = "fd00::/64" }, "not an IPv4 subnet"},
		"another network name": {func(n *NetworkFacts) { n.NetworkName = "vxlan0" }, HybridOverlayNetwork},
	} {
		in := hybridInput()
		tc.mutate(&in.Network)
		if _, err := Render(in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	in := hybridInput()
	in.Payload.Files = in.Payload.Files[:3]
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "the payload has no hybrid-overlay-node.exe") {
		t.Errorf("ovn-hybrid without hybrid-overlay-node.exe in the payload: %v", err)
	}
}

// The administrator's limits reach hybrid-overlay-node in its own units:
// megabytes and days, rounded up; a size of 0 (never rotate), which
// lumberjack cannot do, leaves its default.
func TestHybridOverlayLogLimits(t *testing.T) {
	for _, tc := range []struct {
		limits logrotate.Limits
		want   []string
	}{
		{logrotate.Limits{Size: 10 << 20, Age: 24 * time.Hour}, []string{"--logfile-maxsize", "10", "--logfile-maxage", "1"}},
		{logrotate.Limits{Size: 1, Age: 25 * time.Hour}, []string{"--logfile-maxsize", "1", "--logfile-maxage", "2"}},
		{logrotate.Limits{Size: 0, Age: 0}, []string{"--logfile-maxage", "0"}},
	} {
		if got := hybridOverlayLogLimits(tc.limits); !slices.Equal(got, tc.want) {
			t.Errorf("limits %+v: %v, want %v", tc.limits, got, tc.want)
		}
	}
}
