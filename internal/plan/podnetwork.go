package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
)

// The node's pod subnet is known only once its Node exists: the kubelet
// registers it, then kube-controller-manager's node IPAM gives it
// spec.podCIDR (flannel), or the hybrid overlay controller its annotation
// HybridOverlaySubnetAnnotation (ovn-hybrid). What depends on the subnet,
// the CNI configuration (host-local IPAM over the subnet) and kube-proxy's
// configuration (its source VIP, an address of the subnet), is therefore
// not in the plan: the plan carries PodNetworkPath, everything else those
// files need, and kube-proxy's service writes them when it starts, before
// kube-proxy runs (winnode-agent pod-network, run by winnode-service.exe's
// --before). So one apply configures a host, as on Windows nodes set up by
// hand, where kube-proxy's start script takes the source VIP from the
// subnet flanneld leased, and as the Windows Machine Config Operator does,
// which waits for the hybrid overlay's annotation before writing the CNI
// configuration (docs/networking.md).
const (
	// PodNetworkPath is the pod network's settings (PodNetwork, JSON).
	PodNetworkPath = `C:\k\pod-network.json`
	// PodNetworkCommand is the agent's command that completes them with
	// the node's subnet (cmd/winnode-agent); with PodNetworkWaitOnly it
	// only waits for the subnet (before flanneld, which exits while the
	// kubelet has not joined: render.go).
	PodNetworkCommand  = "pod-network"
	PodNetworkWaitOnly = "wait-only"
)

// PodNetwork is what the host needs, besides its Node's pod subnet, to
// write the files that depend on it (Files): the node's name and the
// network's facts without the subnet (Network.PodCIDR is empty).
type PodNetwork struct {
	NodeName      string       `json:"nodeName"`
	Network       NetworkFacts `json:"network"`
	ClusterDNS    []string     `json:"clusterDNS,omitempty"`
	ClusterDomain string       `json:"clusterDomain,omitempty"`
}

// SubnetFiles are the files kube-proxy's service writes when it starts, in
// the plan as its Service.Writes.
var SubnetFiles = []string{CNIConfPath, KubeProxyConfigPath}

// podNetwork is the plan's PodNetworkPath: never the subnet, so that the
// plan is the same before and after the Node has one.
func (in RenderInput) podNetwork() ([]byte, error) {
	n := in.Network
	n.PodCIDR = ""
	return marshalConf(PodNetwork{NodeName: NodeName(in.Host.Info.Hostname), Network: n,
		ClusterDNS: in.Cluster.ClusterDNS, ClusterDomain: in.Cluster.ClusterDomain})
}

// ParsePodNetwork reads PodNetworkPath's content, refusing what Files
// could not complete.
func ParsePodNetwork(data []byte) (*PodNetwork, error) {
	var p PodNetwork
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s is not winnode's pod network settings: %w", PodNetworkPath, err)
	}
	switch {
	case p.NodeName == "":
		return nil, fmt.Errorf("%s names no node", PodNetworkPath)
	case p.Network.Mode != NetworkFlannel && p.Network.Mode != NetworkOVNHybrid:
		return nil, fmt.Errorf("%s: network mode %q has no pod subnet to wait for (only flannel and ovn-hybrid)", PodNetworkPath, p.Network.Mode)
	case p.Network.PodCIDR != "":
		return nil, fmt.Errorf("%s names a pod subnet; it comes from the Node", PodNetworkPath)
	}
	return &p, nil
}

// NodeSubnet is the pod subnet a Node has in network mode mode, from its
// spec.podCIDR (flannel) or annotations (ovn-hybrid: the hybrid overlay's),
// masked as a CIDR (an annotation may say 10.132.2.7/24); "" in other
// modes or while it has none, and as it is when it is no CIDR.
func NodeSubnet(mode, podCIDR string, annotations map[string]string) string {
	var s string
	switch mode {
	case NetworkFlannel:
		s = podCIDR
	case NetworkOVNHybrid:
		s = annotations[HybridOverlaySubnetAnnotation]
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return s
}

// Files are the files that depend on the node's pod subnet, SubnetFiles:
// the win-overlay CNI configuration over the subnet and kube-proxy's
// configuration with its source VIP. A subnet the network refuses (not
// IPv4, too small, outside the hybrid cluster network) is an error naming
// it.
func (p PodNetwork) Files(subnet string) ([]GeneratedFile, error) {
	n := p.Network
	n.PodCIDR = subnet
	if subnet == "" {
		return nil, errors.New("no pod subnet")
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("node %s: %w", p.NodeName, err)
	}
	conf, err := winOverlayConf(n, ClusterFacts{ClusterDNS: p.ClusterDNS, ClusterDomain: p.ClusterDomain})
	if err != nil {
		return nil, err
	}
	proxy, err := kubeProxyConfig(p.NodeName, n)
	if err != nil {
		return nil, err
	}
	return []GeneratedFile{{HostPath: CNIConfPath, Content: conf}, {HostPath: KubeProxyConfigPath, Content: proxy}}, nil
}
