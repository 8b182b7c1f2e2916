package configure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
)

// NetworkAuto is --network's default: the mode is decided from what the
// cluster runs (decideNetwork).
const NetworkAuto = "auto"

// NetworkModes are the values --network takes.
var NetworkModes = []string{NetworkAuto, plan.NetworkFlannel, plan.NetworkOVNHybrid, plan.NetworkExternal}

// ParseNetwork checks a --network value.
func ParseNetwork(s string) (string, error) {
	for _, m := range NetworkModes {
		if s == m {
			return s, nil
		}
	}
	return "", fmt.Errorf("%q is not one of auto, flannel, ovn-hybrid, external", s)
}

// NetworkHelp is --network's help, for the operator and winnodectl.
const NetworkHelp = "the pod network of Windows nodes: auto (ovn-hybrid when the cluster runs OVN-Kubernetes, flannel when it runs flannel, else external), flannel (winnode runs flanneld and kube-proxy on flannel's VXLAN overlay), ovn-hybrid (winnode runs hybrid-overlay-node and kube-proxy on OVN-Kubernetes' hybrid overlay; needs --hybrid-cluster-cidr) or external (the cluster's own Windows CNI DaemonSets; winnode installs the kubelet only)"

// EventReasonNetworkMode is the Normal event that says which pod network
// mode a host's plan uses, and why.
const EventReasonNetworkMode = "NetworkMode"

// flannelConfigMaps are where flannel's manifest (kube-flannel.yml) keeps
// its configuration: namespace kube-flannel since flannel v0.20, kube-system
// before.
var flannelConfigMaps = [][2]string{{"kube-flannel", "kube-flannel-cfg"}, {"kube-system", "kube-flannel-cfg"}}

// The operator reads flannel's ConfigMap by name only (its RBAC marker is
// in internal/controller setup.go).

// flannelDefaultNetwork is the HNS network name flanneld creates on Windows
// when the backend names none.
const flannelDefaultNetwork = "vxlan0"

// networkFacts decides the host's pod network mode (c.Network, or what the
// cluster runs when it is auto) and gathers what that mode needs; node is
// the host's Node (nil before it registered), whose spec.podCIDR is the
// host's pod subnet. It also says why the mode was chosen.
func (c *Configurer) networkFacts(ctx context.Context, node *corev1.Node) (plan.NetworkFacts, string, error) {
	mode := c.Network
	if mode == "" {
		mode = NetworkAuto
	}
	why := "--network " + mode
	if mode == NetworkAuto {
		var err error
		if mode, why, err = c.decideNetwork(ctx); err != nil {
			return plan.NetworkFacts{}, "", err
		}
	}
	switch mode {
	case plan.NetworkExternal:
		return plan.NetworkFacts{Mode: mode}, why, nil
	case plan.NetworkOVNHybrid:
		facts, err := c.hybridOverlayFacts(node)
		return facts, why, err
	case plan.NetworkFlannel:
		flannel, where, err := c.flannelNetConf(ctx)
		if err != nil {
			return plan.NetworkFacts{}, "", err
		}
		if flannel == nil {
			return plan.NetworkFacts{}, "", errors.New("--network flannel, but there is no flannel ConfigMap (kube-flannel-cfg in namespace kube-flannel or kube-system): install flannel, or choose another --network")
		}
		facts, err := flannel.facts(where, c.ServiceCIDR)
		if err != nil {
			return plan.NetworkFacts{}, "", err
		}
		if node != nil {
			facts.PodCIDR = node.Spec.PodCIDR
		}
		return facts, why, nil
	}
	return plan.NetworkFacts{}, "", fmt.Errorf("--network %q is not one of auto, flannel, ovn-hybrid, external", mode)
}

// decideNetwork is --network auto: ovn-hybrid when the cluster runs
// OVN-Kubernetes, else flannel when it runs flannel, else external; and
// why.
func (c *Configurer) decideNetwork(ctx context.Context) (string, string, error) {
	ovnNode, err := c.ovnKubernetesNode(ctx)
	if err != nil {
		return "", "", err
	}
	if ovnNode != "" {
		return plan.NetworkOVNHybrid, "the cluster runs OVN-Kubernetes (Node " + ovnNode + " has its annotation " + ovnNodeSubnetsAnnotation + ")", nil
	}
	flannel, where, err := c.flannelNetConf(ctx)
	if err != nil {
		return "", "", err
	}
	if flannel != nil {
		return plan.NetworkFlannel, "the cluster runs flannel (ConfigMap " + where + ")", nil
	}
	return plan.NetworkExternal, "no OVN-Kubernetes Node annotation (" + ovnNodeSubnetsAnnotation + ") and no flannel ConfigMap (kube-flannel/kube-flannel-cfg) found: the cluster's own Windows CNI DaemonSets are expected to set up pod networking and kube-proxy", nil
}

// flannelConf is the part of flannel's net-conf.json winnode reads.
type flannelConf struct {
	Network string `json:"Network"`
	Backend struct {
		Type string `json:"Type"`
		Name string `json:"Name"`
		VNI  int    `json:"VNI"`
		Port int    `json:"Port"`
	} `json:"Backend"`
}

// flannelNetConf reads flannel's ConfigMap: nil when the cluster has none.
func (c *Configurer) flannelNetConf(ctx context.Context) (*flannelConf, string, error) {
	for _, nn := range flannelConfigMaps {
		cm, err := c.Kube.CoreV1().ConfigMaps(nn[0]).Get(ctx, nn[1], metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			// The operator's role allows this read; winnodectl's user may
			// not have it: then auto cannot see flannel.
			continue
		case err != nil:
			return nil, "", fmt.Errorf("reading flannel's ConfigMap %s/%s: %w", nn[0], nn[1], err)
		}
		where := nn[0] + "/" + nn[1]
		var conf flannelConf
		if err := json.Unmarshal([]byte(cm.Data["net-conf.json"]), &conf); err != nil {
			return nil, "", fmt.Errorf("flannel's ConfigMap %s: key net-conf.json is not flannel's JSON configuration: %v", where, err)
		}
		return &conf, where, nil
	}
	return nil, "", nil
}

// facts checks the flannel configuration against what Windows needs and
// turns it into the plan's facts.
func (f *flannelConf) facts(where, serviceCIDR string) (plan.NetworkFacts, error) {
	if f.Backend.Type != "vxlan" {
		return plan.NetworkFacts{}, fmt.Errorf("flannel's ConfigMap %s uses backend %q; Windows nodes need the vxlan backend (flannel's backends.md: host-gw and vxlan are the Windows backends, and winnode sets up vxlan)", where, f.Backend.Type)
	}
	if _, err := netip.ParsePrefix(f.Network); err != nil {
		return plan.NetworkFacts{}, fmt.Errorf("flannel's ConfigMap %s: Network %q is not a CIDR", where, f.Network)
	}
	if f.Backend.VNI < 4096 || f.Backend.Port != 4789 {
		return plan.NetworkFacts{}, fmt.Errorf("flannel's ConfigMap %s has VXLAN VNI %d and Port %d; Windows nodes need VNI 4096 or more and Port 4789 (flannel's backends.md), and every node must use the same: set \"VNI\": 4096, \"Port\": 4789 in net-conf.json and restart flannel's DaemonSet", where, f.Backend.VNI, f.Backend.Port)
	}
	name := f.Backend.Name
	if name == "" {
		name = flannelDefaultNetwork
	}
	return plan.NetworkFacts{Mode: plan.NetworkFlannel, ClusterCIDR: f.Network, ServiceCIDR: serviceCIDR,
		NetworkName: name, VNI: f.Backend.VNI, Port: f.Backend.Port}, nil
}

// networkUnsupported records a network that cannot be set up: condition
// NetworkUnsupported, and a step error with its reason.
func networkUnsupported(inst *winnodev1.WindowsInstance, err error) error {
	SetCondition(inst, winnodev1.ConditionNetworkUnsupported, metav1.ConditionTrue, winnodev1.ReasonNetworkUnsupported, err.Error())
	return stepErr(StepPlan, winnodev1.ReasonNetworkUnsupported, err)
}

// recordNetwork notes the mode and subnet the plan was rendered with, and
// says which mode and why in an event when it changes.
func (c *Configurer) recordNetwork(inst *winnodev1.WindowsInstance, n plan.NetworkFacts, why string) {
	meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionNetworkUnsupported)
	if inst.Status.Network != n.Mode {
		c.event(inst, corev1.EventTypeNormal, EventReasonNetworkMode, "pod network %s: %s", n.Mode, why)
	}
	inst.Status.Network, inst.Status.PodCIDR = n.Mode, n.PodCIDR
}

// nodeSubnet is the pod subnet the Node has in the host's network mode
// (flannel: spec.podCIDR; ovn-hybrid: the hybrid overlay's annotation);
// "" in other modes or while it has none. In the form status.podCIDR
// records it, so that an annotation written as 10.132.2.7/24 is not "new"
// on every look.
func nodeSubnet(mode string, node *corev1.Node) string {
	if node == nil {
		return ""
	}
	return plan.NodeSubnet(mode, node.Spec.PodCIDR, node.Annotations)
}

// subnetArrived says whether the Node has a pod subnet that
// status.podCIDR does not record yet (join.go).
func subnetArrived(inst *winnodev1.WindowsInstance, node *corev1.Node) bool {
	s := nodeSubnet(inst.Status.Network, node)
	return s != "" && s != inst.Status.PodCIDR
}
