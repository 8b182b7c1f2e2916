package plan

import (
	"encoding/json"
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// kubeProxyConfig is kube-proxy's KubeProxyConfiguration (--config), in
// kernelspace mode (the one mode on Windows), with the node's kubeconfig
// (written by the kubelet after its TLS bootstrap) and name; on an overlay
// network, the settings Kubernetes' "Networking on Windows" guide gives an
// overlay node: the HNS network kube-proxy programs, the source VIP Service
// traffic leaves pods from (an address of the node's subnet that IPAM never
// hands out), DSR off, and the cluster's pod range. The host writes it
// when kube-proxy starts (podnetwork.go), with the node's subnet.
func kubeProxyConfig(nodeName string, n NetworkFacts) ([]byte, error) {
	c := kubeproxyv1alpha1.KubeProxyConfiguration{
		TypeMeta:         metav1.TypeMeta{APIVersion: kubeproxyv1alpha1.SchemeGroupVersion.String(), Kind: "KubeProxyConfiguration"},
		HostnameOverride: nodeName,
		Mode:             "kernelspace",
	}
	c.ClientConnection.Kubeconfig = KubeconfigPath
	c.Logging.Verbosity = 2
	overlay := n.Mode == NetworkFlannel || n.Mode == NetworkOVNHybrid
	if overlay {
		subnet, err := netip.ParsePrefix(n.PodCIDR)
		if err != nil {
			return nil, fmt.Errorf("kube-proxy configuration: node pod CIDR %q: %w", n.PodCIDR, err)
		}
		_, sourceVIP, _ := SubnetAddresses(subnet)
		c.Winkernel.NetworkName = n.NetworkName
		c.Winkernel.SourceVip = sourceVIP.String()
		c.ClusterCIDR = n.ClusterCIDR
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("kube-proxy configuration: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("kube-proxy configuration: %w", err)
	}
	// The type has no omitempty: every field it has is written, most
	// empty. Only what is set stays, so the file says what winnode chose;
	// kube-proxy defaults the rest.
	pruneEmpty(m)
	if overlay {
		m["winkernel"].(map[string]any)["enableDSR"] = false
	}
	return yaml.Marshal(m)
}

// pruneEmpty is prune, and drops empty strings, false and empty lists too.
func pruneEmpty(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			pruneEmpty(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case string:
			if v == "" || v == "0s" || v == "0" {
				delete(m, k)
			}
		case bool:
			if !v {
				delete(m, k)
			}
		case []any:
			if len(v) == 0 {
				delete(m, k)
			}
		case float64:
			if v == 0 {
				delete(m, k)
			}
		case nil:
			delete(m, k)
		}
	}
}
