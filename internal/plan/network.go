package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Pod network modes (--network): who gives the node's pods their network.
const (
	// NetworkFlannel: flannel's VXLAN backend, the layout Kubernetes' own
	// Windows guides use; winnode runs flanneld, writes the win-overlay CNI
	// configuration and runs kube-proxy on the overlay.
	NetworkFlannel = "flannel"
	// NetworkOVNHybrid: OVN-Kubernetes' hybrid overlay (OpenShift), as the
	// Windows Machine Config Operator sets it up: winnode runs
	// hybrid-overlay-node, writes the win-overlay CNI configuration on its
	// network and runs kube-proxy on it (hybridoverlay.go).
	NetworkOVNHybrid = "ovn-hybrid"
	// NetworkExternal: the cluster's own Windows CNI DaemonSets (HostProcess
	// Calico, Antrea, flannel) own pod networking and kube-proxy; winnode
	// installs the kubelet and prepares the CNI folders.
	NetworkExternal = "external"
)

// Where the pod network's files live on the host. containerd's CRI plugin
// must read CNI plugins and configuration from these folders (bin_dir and
// conf_dir in C:\Program Files\containerd\config.toml; docs/networking.md),
// the layout the Windows Machine Config Operator uses.
const (
	CNIBinDir          = `C:\k\cni\bin`
	CNIConfDir         = `C:\k\cni\config`
	CNIConfPath        = `C:\k\cni\config\10-winnode.conf`
	FlannelDir         = `C:\k\flannel`
	FlannelNetConfPath = `C:\k\flannel\net-conf.json`
	FlannelSubnetFile  = `C:\k\flannel\subnet.env`
	FlanneldService    = "flanneld"
	PayloadFlanneld    = "flanneld.exe"
)

// NetworkFacts are what the renderer needs to know about the pod network.
type NetworkFacts struct {
	// Mode is NetworkFlannel, NetworkOVNHybrid or NetworkExternal.
	Mode string `json:"mode"`
	// ClusterCIDR is the cluster's pod network; ServiceCIDR its Services'
	// range (both for the CNI configuration's NAT exceptions and routes,
	// and kube-proxy's --cluster-cidr).
	ClusterCIDR string `json:"clusterCIDR,omitempty"`
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// PodCIDR is this node's pod subnet (flannel: the Node's spec.podCIDR;
	// ovn-hybrid: its annotation k8s.ovn.org/hybrid-overlay-node-subnet).
	// Never in the plan (podnetwork.go): the host reads it from its Node
	// when kube-proxy starts. The operator sets it to check it and to
	// record it in status.podCIDR.
	PodCIDR string `json:"podCIDR,omitempty"`
	// NetworkName is the HNS network the overlay program creates and the
	// pods attach to (flannel: the backend's, vxlan0 by default;
	// ovn-hybrid: HybridOverlayNetwork).
	NetworkName string `json:"networkName,omitempty"`
	// Flannel's VXLAN backend, as the cluster's net-conf.json says: its
	// VXLAN identifier and UDP port.
	VNI  int `json:"vni,omitempty"`
	Port int `json:"port,omitempty"`
}

// networkFiles are the generated files of the pod network: flanneld's
// net-conf.json, and the settings kube-proxy's service completes with the
// node's subnet (podnetwork.go).
func (in RenderInput) networkFiles() ([]GeneratedFile, error) {
	n := in.Network
	var files []GeneratedFile
	switch n.Mode {
	case NetworkFlannel:
		netConf, err := flannelNetConf(n)
		if err != nil {
			return nil, err
		}
		files = append(files, GeneratedFile{HostPath: FlannelNetConfPath, Content: netConf})
	case NetworkOVNHybrid:
		// hybrid-overlay-node takes its settings from flags and the Node.
	default:
		return nil, nil
	}
	podNetwork, err := in.podNetwork()
	if err != nil {
		return nil, err
	}
	return append(files, GeneratedFile{HostPath: PodNetworkPath, Content: podNetwork}), nil
}

// flannelNetConf is flanneld's net-conf.json: the cluster's network and
// the VXLAN backend, as in kube-flannel.yml's ConfigMap
// (https://github.com/flannel-io/flannel/blob/master/Documentation/configuration.md).
func flannelNetConf(n NetworkFacts) ([]byte, error) {
	conf := map[string]any{
		"Network": n.ClusterCIDR,
		"Backend": map[string]any{
			"Type": "vxlan",
			// The HNS network flanneld creates on Windows, by name.
			"Name": n.NetworkName,
			// flannel's backends.md, vxlan: "VNI ... On Windows should be
			// greater than or equal to 4096" and "Port ... on Windows, must
			// be 4789": the Linux nodes' net-conf.json must say the same
			// (checked by the operator before rendering).
			"VNI":  n.VNI,
			"Port": n.Port,
		},
	}
	return marshalConf(conf)
}

// winOverlayConf is the CNI configuration of the win-overlay plugin on the
// node's subnet (containernetworking/plugins, plugins/main/windows/
// win-overlay), with the policies Kubernetes' Windows networking guide and
// flannel's Windows CNI template give an overlay node; on the hybrid
// overlay the same, as the Windows Machine Config Operator's CNI template
// (openshift/windows-machine-config-operator, win-overlay on
// OVNKubernetesHybridOverlayNetwork with host-local IPAM over the node's
// hybrid subnet, OutBoundNAT exceptions and the encapsulated route to
// Services).
func winOverlayConf(n NetworkFacts, c ClusterFacts) ([]byte, error) {
	subnet, err := netip.ParsePrefix(n.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("node pod CIDR %q: %w", n.PodCIDR, err)
	}
	gateway, _, firstPod := SubnetAddresses(subnet)
	domain := c.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	conf := map[string]any{
		"cniVersion": "0.2.0",
		// win-overlay attaches pods to the HNS network of this name, the
		// one flanneld created.
		"name":         n.NetworkName,
		"type":         "win-overlay",
		"capabilities": map[string]bool{"portMappings": true, "dns": true},
		"dns": map[string]any{
			"Nameservers": nonNil(c.ClusterDNS),
			"Search":      []string{"svc." + domain},
		},
		// host-local IPAM over the node's subnet. The gateway (.1) is the
		// HNS network's; .2 is kube-proxy's source VIP (below), so pods
		// start at .3.
		"ipam": map[string]any{
			"type":       "host-local",
			"subnet":     subnet.String(),
			"gateway":    gateway.String(),
			"rangeStart": firstPod.String(),
			"routes":     []map[string]string{{"dst": "0.0.0.0/0"}},
		},
		"policies": []map[string]any{
			// Traffic to pods and Services keeps the pod's address; the
			// rest leaves NATed to the node's (Kubernetes docs, "Networking
			// on Windows": OutBoundNAT with an exception list).
			{"name": "EndpointPolicy", "value": map[string]any{"Type": "OutBoundNAT", "ExceptionList": []string{n.ClusterCIDR, n.ServiceCIDR}}},
			// Service traffic is encapsulated to the node kube-proxy
			// programs it on (the ROUTE policy with NeedEncap of the same
			// guide).
			{"name": "EndpointPolicy", "value": map[string]any{"Type": "ROUTE", "DestinationPrefix": n.ServiceCIDR, "NeedEncap": true}},
		},
	}
	if n.Mode == NetworkFlannel {
		// flannel's Windows CNI template: the MAC prefix of endpoints on
		// a flannel VXLAN network (the hybrid overlay's HNS network picks
		// its endpoints' MACs itself).
		conf["endpointMacPrefix"] = "0E-2A"
	}
	return marshalConf(conf)
}

// SubnetAddresses are a node subnet's gateway (its first address), the
// source VIP kube-proxy uses on an overlay (the second) and the first pod
// address (the third).
func SubnetAddresses(subnet netip.Prefix) (gateway, sourceVIP, firstPod netip.Addr) {
	gateway = subnet.Masked().Addr().Next()
	sourceVIP = gateway.Next()
	return gateway, sourceVIP, sourceVIP.Next()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func marshalConf(v any) ([]byte, error) {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Validate refuses network facts the plan cannot be made from.
func (n NetworkFacts) Validate() error {
	var errs []error
	switch n.Mode {
	case NetworkFlannel:
		for name, cidr := range map[string]string{"cluster CIDR": n.ClusterCIDR, "Service CIDR": n.ServiceCIDR} {
			if _, err := netip.ParsePrefix(cidr); err != nil {
				errs = append(errs, fmt.Errorf("flannel: %s %q is not a CIDR", name, cidr))
			}
		}
		if n.PodCIDR != "" {
			p, err := netip.ParsePrefix(n.PodCIDR)
			if err != nil || !p.Addr().Is4() || p.Bits() > 29 {
				errs = append(errs, fmt.Errorf("flannel: node pod CIDR %q is not an IPv4 subnet of at least 8 addresses", n.PodCIDR))
			}
		}
		if strings.TrimSpace(n.NetworkName) == "" {
			errs = append(errs, errors.New("flannel: no VXLAN network name"))
		}
		if n.VNI < 4096 || n.Port != 4789 {
			errs = append(errs, fmt.Errorf("flannel: VNI %d and port %d do not work on Windows, which needs VNI 4096 or more and port 4789 (flannel's backends.md)", n.VNI, n.Port))
		}
	case NetworkExternal:
	case NetworkOVNHybrid:
		errs = append(errs, n.checkHybridOverlay()...)
	default:
		errs = append(errs, fmt.Errorf("network mode %q is not one of flannel, ovn-hybrid, external", n.Mode))
	}
	return errors.Join(errs...)
}
