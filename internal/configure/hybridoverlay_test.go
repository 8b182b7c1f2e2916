package configure

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// --network auto, against the real API server: the test cluster runs
// flannel (its ConfigMap); once a Node carries OVN-Kubernetes' subnet
// annotation, it is an OVN-Kubernetes cluster and auto picks ovn-hybrid,
// saying which Node told it.
func TestAutoNetworkDecision(t *testing.T) {
	kube, err := kubernetes.NewForConfig(testenv.Get(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := &Configurer{Kube: kube, Network: NetworkAuto}
	mode, why, err := c.decideNetwork(ctx)
	if err != nil || mode != plan.NetworkFlannel || !strings.Contains(why, "ConfigMap kube-flannel/kube-flannel-cfg") {
		t.Fatalf("with flannel's ConfigMap only: %q (%s), %v; want flannel", mode, why, err)
	}
	name := fmt.Sprintf("ovn-linux-%d", os.Getpid()%100000)
	node := builder.Node(name).Annotations(map[string]string{"k8s.ovn.org/node-subnets": `{"default":["10.128.2.0/23"]}`}).Build()
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	mode, why, err = c.decideNetwork(ctx)
	if err != nil || mode != plan.NetworkOVNHybrid || !strings.Contains(why, "Node "+name+" has its annotation k8s.ovn.org/node-subnets") {
		t.Errorf("with an OVN-Kubernetes Node: %q (%s), %v; want ovn-hybrid, naming the Node", mode, why, err)
	}
}

func hybridConfigurer() *Configurer {
	return &Configurer{
		Network: plan.NetworkOVNHybrid, ServiceCIDR: "172.30.0.0/16", HybridClusterCIDR: "10.132.0.0/14",
		Payload: &payload.Manifest{Files: []payload.File{{Name: plan.PayloadHybridOverlay, HostPath: `C:\k\hybrid-overlay-node.exe`}}},
	}
}

func windowsNode(subnet string) *corev1.Node {
	n := builder.Node("win-1")
	if subnet != "" {
		n.Annotations(map[string]string{plan.HybridOverlaySubnetAnnotation: subnet})
	}
	return n.Build()
}

func TestHybridOverlayFacts(t *testing.T) {
	c := hybridConfigurer()
	facts, why, err := c.networkFacts(context.Background(), windowsNode("10.132.4.7/24"))
	want := plan.NetworkFacts{Mode: plan.NetworkOVNHybrid, ClusterCIDR: "10.132.0.0/14", ServiceCIDR: "172.30.0.0/16",
		PodCIDR: "10.132.4.0/24", NetworkName: plan.HybridOverlayNetwork}
	if err != nil || facts != want || why != "--network ovn-hybrid" {
		t.Errorf("facts %+v (%s), %v; want %+v", facts, why, err, want)
	}
	// Before the hybrid overlay controller gave the Node its subnet (or
	// before the Node registered): no subnet yet, no error.
	for _, node := range []*corev1.Node{nil, windowsNode("")} {
		if facts, _, err := c.networkFacts(context.Background(), node); err != nil || facts.PodCIDR != "" {
			t.Errorf("without a subnet: %+v, %v", facts, err)
		}
	}
}

func TestHybridOverlayRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Configurer)
		node   *corev1.Node
		want   string
	}{
		"no program":        {func(c *Configurer) { c.Payload = &payload.Manifest{} }, nil, "needs hybrid-overlay-node.exe, which the payload does not have"},
		"no cluster CIDR":   {func(c *Configurer) { c.HybridClusterCIDR = "" }, nil, "needs --hybrid-cluster-cidr"},
		"subnet outside":    {func(*Configurer) {}, windowsNode("10.244.1.0/24"), "annotation k8s.ovn.org/hybrid-overlay-node-subnet of Node win-1: subnet 10.244.1.0/24 is not inside --hybrid-cluster-cidr 10.132.0.0/14"},
		"subnet not a CIDR": {func(*Configurer) {}, windowsNode("10.132.1.0"), `"10.132.1.0" is not an IPv4 subnet`},
	} {
		c := hybridConfigurer()
		tc.mutate(c)
		if _, _, err := c.networkFacts(context.Background(), tc.node); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

// The plan is rendered again when the Node's subnet of the host's mode
// appears or changes, and only then.
func TestSubnetArrived(t *testing.T) {
	inst := func(mode, podCIDR string) *winnodev1.WindowsInstance {
		i := &winnodev1.WindowsInstance{}
		i.Status.Network, i.Status.PodCIDR = mode, podCIDR
		return i
	}
	flannelNode := builder.Node("").PodCIDR("10.244.1.0/24").Build()
	for _, tc := range []struct {
		what string
		inst *winnodev1.WindowsInstance
		node *corev1.Node
		want bool
	}{
		{"ovn-hybrid, subnet arrived", inst(plan.NetworkOVNHybrid, ""), windowsNode("10.132.1.0/24"), true},
		{"ovn-hybrid, same subnet", inst(plan.NetworkOVNHybrid, "10.132.1.0/24"), windowsNode("10.132.1.0/24"), false},
		{"ovn-hybrid, same subnet written with a host address", inst(plan.NetworkOVNHybrid, "10.132.1.0/24"), windowsNode("10.132.1.9/24"), false},
		{"ovn-hybrid, none yet", inst(plan.NetworkOVNHybrid, ""), windowsNode(""), false},
		{"ovn-hybrid ignores spec.podCIDR", inst(plan.NetworkOVNHybrid, ""), flannelNode, false},
		{"flannel, podCIDR arrived", inst(plan.NetworkFlannel, ""), flannelNode, true},
		{"flannel ignores the hybrid annotation", inst(plan.NetworkFlannel, ""), windowsNode("10.132.1.0/24"), false},
		{"external", inst(plan.NetworkExternal, ""), flannelNode, false},
		{"no Node", inst(plan.NetworkOVNHybrid, ""), nil, false},
	} {
		if got := subnetArrived(tc.inst, tc.node); got != tc.want {
			t.Errorf("%s: subnetArrived = %v, want %v", tc.what, got, tc.want)
		}
	}
}

func TestParseHybridClusterCIDR(t *testing.T) {
	for in, want := range map[string]string{"": "", "10.132.0.0/14": "10.132.0.0/14", "10.133.1.1/14": "10.132.0.0/14"} {
		if got, err := ParseHybridClusterCIDR(in); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"10.132.0.0", "fd00::/48", "x"} {
		if _, err := ParseHybridClusterCIDR(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("%q: %v, want an error naming it", in, err)
		}
	}
}

// The node subnet annotation is written by a cluster controller: whatever
// it holds, the parser either refuses it or returns an IPv4 subnet of at
// least 8 addresses inside the hybrid cluster network.
func FuzzParseHybridSubnet(f *testing.F) {
	for _, s := range []string{"10.132.2.0/24", "10.132.2.7/24", "10.244.0.0/24", "10.132.0.0/13", "fd00::/64", "", "10.132.2.0/30", "1.2.3.4/33"} {
		f.Add(s)
	}
	cluster := netip.MustParsePrefix("10.132.0.0/14")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseHybridSubnet(s, cluster)
		if err != nil {
			return
		}
		if !p.Addr().Is4() || p.Bits() > 29 || p.Bits() < cluster.Bits() || !cluster.Contains(p.Addr()) || p != p.Masked() {
			t.Errorf("%q parsed to %s", s, p)
		}
	})
}
