package configure

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/plan"
)

// ovnNodeSubnetsAnnotation is the annotation OVN-Kubernetes' cluster
// manager puts on every Node it gives a subnet of the cluster network
// (ovn-kubernetes, go-controller/pkg/util/node_annotations.go:
// ovnNodeSubnets = "k8s.ovn.org/node-subnets"; Windows nodes on the hybrid
// overlay never get it, they get k8s.ovn.org/hybrid-overlay-node-subnet).
// A Node carrying it is how --network auto knows the cluster runs
// OVN-Kubernetes, on OpenShift and elsewhere alike.
const ovnNodeSubnetsAnnotation = "k8s.ovn.org/node-subnets"

// HybridClusterCIDRHelp is --hybrid-cluster-cidr's help.
const HybridClusterCIDRHelp = "ovn-hybrid: the hybrid overlay's cluster network, from which OVN-Kubernetes gives each Windows node its subnet (OpenShift: hybridOverlayConfig.hybridClusterNetwork[].cidr of networks.operator.openshift.io/cluster); kube-proxy's --cluster-cidr and the pods' NAT exception"

// ParseHybridClusterCIDR checks a --hybrid-cluster-cidr value: "" (not
// set) or an IPv4 CIDR, returned in its canonical form.
func ParseHybridClusterCIDR(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return "", fmt.Errorf("%q is not an IPv4 CIDR (the hybrid overlay is IPv4 on Windows)", s)
	}
	return p.Masked().String(), nil
}

// ovnKubernetesNode is the name of a Node OVN-Kubernetes gave a subnet,
// "" when there is none (or this client may not list Nodes: winnodectl's
// user may lack the right, and then auto cannot see OVN-Kubernetes). One
// page is enough: on an OVN-Kubernetes cluster every Linux node has it.
func (c *Configurer) ovnKubernetesNode(ctx context.Context) (string, error) {
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 100})
	switch {
	case apierrors.IsForbidden(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("listing Nodes to see whether the cluster runs OVN-Kubernetes: %w", err)
	}
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[ovnNodeSubnetsAnnotation]; ok {
			return n.Name, nil
		}
	}
	return "", nil
}

// hybridOverlayFacts are the ovn-hybrid facts: the hybrid cluster network
// (--hybrid-cluster-cidr), the Service range, and the node's subnet from
// the annotation the hybrid overlay controller sets (none before it did).
func (c *Configurer) hybridOverlayFacts(node *corev1.Node) (plan.NetworkFacts, error) {
	if _, ok := c.Payload.Lookup(plan.PayloadHybridOverlay); !ok {
		return plan.NetworkFacts{}, errors.New("--network ovn-hybrid needs hybrid-overlay-node.exe, which the payload does not have (it cannot be built from the Go module proxy: give it to the payload build as an input file, HYBRID_OVERLAY_NODE=/path/to/hybrid-overlay-node.exe make payload; docs/networking.md)")
	}
	if c.HybridClusterCIDR == "" {
		return plan.NetworkFacts{}, errors.New("--network ovn-hybrid needs --hybrid-cluster-cidr, the hybrid overlay's cluster network (OpenShift: hybridOverlayConfig.hybridClusterNetwork[].cidr of networks.operator.openshift.io/cluster; docs/networking.md)")
	}
	cluster, err := netip.ParsePrefix(c.HybridClusterCIDR)
	if err != nil {
		return plan.NetworkFacts{}, fmt.Errorf("--hybrid-cluster-cidr %q is not a CIDR", c.HybridClusterCIDR)
	}
	facts := plan.NetworkFacts{Mode: plan.NetworkOVNHybrid, ClusterCIDR: cluster.Masked().String(),
		ServiceCIDR: c.ServiceCIDR, NetworkName: plan.HybridOverlayNetwork}
	if s := nodeSubnet(plan.NetworkOVNHybrid, node); s != "" {
		subnet, err := parseHybridSubnet(s, cluster)
		if err != nil {
			return plan.NetworkFacts{}, fmt.Errorf("annotation %s of Node %s: %w", plan.HybridOverlaySubnetAnnotation, node.Name, err)
		}
		facts.PodCIDR = subnet.String()
	}
	return facts, nil
}

// parseHybridSubnet reads the hybrid overlay's node subnet annotation (set
// by the cluster's controller, outside input): an IPv4 subnet of at least
// 8 addresses inside the hybrid cluster network.
func parseHybridSubnet(value string, cluster netip.Prefix) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(value)
	if err != nil || !p.Addr().Is4() || p.Bits() > 29 {
		return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 subnet of at least 8 addresses", value)
	}
	p = p.Masked()
	if p.Bits() < cluster.Bits() || !cluster.Contains(p.Addr()) {
		return netip.Prefix{}, fmt.Errorf("subnet %s is not inside --hybrid-cluster-cidr %s: set that flag to the cluster's hybrid cluster network", p, cluster)
	}
	return p, nil
}
