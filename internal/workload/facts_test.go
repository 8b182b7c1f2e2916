package workload

import (
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// A workload cluster's facts are its Cluster's: the control plane
// endpoint, the Service and pod ranges, the DNS domain, the node address
// CIDRs of its annotation; kubeadm's defaults where it says nothing.
func TestFactsOf(t *testing.T) {
	c := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationNodeAddressCIDRs: "10.1.0.0/16, 10.2.0.0/16"}},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "api.example.com", Port: 443},
			ClusterNetwork: clusterv1.ClusterNetwork{
				Services:      clusterv1.NetworkRanges{CIDRBlocks: []string{"172.20.0.0/16"}},
				Pods:          clusterv1.NetworkRanges{CIDRBlocks: []string{"192.168.0.0/16"}},
				ServiceDomain: "corp.local",
			},
		},
	}
	f, err := FactsOf(c)
	if err != nil {
		t.Fatal(err)
	}
	if f.APIServer != "https://api.example.com:443" || f.ServiceCIDR() != "172.20.0.0/16" || f.ClusterDomain != "corp.local" ||
		len(f.PodCIDRs) != 1 || f.PodCIDRs[0] != netip.MustParsePrefix("192.168.0.0/16") || len(f.NodeAddressCIDRs) != 2 {
		t.Errorf("facts %+v", f)
	}
	p := f.CSRPolicy()
	if p.ClusterDomain != "corp.local" || p.ServiceCIDRs[0] != f.ServiceCIDRs[0] || len(p.NodeAddressCIDRs) != 2 {
		t.Errorf("CSR policy %+v", p)
	}
	if err := f.AddressPolicy(nil).CheckAddress("172.20.0.10"); err == nil {
		t.Error("an address in the Cluster's Service range is allowed")
	}
	if err := f.AddressPolicy(nil).CheckAddress("10.96.0.10"); err != nil {
		t.Errorf("an address outside the Cluster's Service range (in kubeadm's default one) is refused: %v", err)
	}

	def, err := FactsOf(&clusterv1.Cluster{})
	if err != nil || def.APIServer != "" || def.ServiceCIDR() != "10.96.0.0/12" || def.ClusterDomain != "cluster.local" || def.NodeAddressCIDRs != nil {
		t.Errorf("defaults: %+v, %v", def, err)
	}
	c.Spec.ControlPlaneEndpoint.Port = 0
	if f, _ := FactsOf(c); f.APIServer != "https://api.example.com:6443" {
		t.Errorf("an endpoint without a port: %s, want kubeadm's 6443", f.APIServer)
	}
	c.Spec.ClusterNetwork.Pods.CIDRBlocks = []string{"192.168.0.0/16", "nonsense"}
	if _, err := FactsOf(c); err == nil || !strings.Contains(err.Error(), `spec.clusterNetwork.pods.cidrBlocks[1]: "nonsense" is not a CIDR`) {
		t.Errorf("a bad pod range: %v", err)
	}
	c.Spec.ClusterNetwork.Pods.CIDRBlocks = nil
	c.Annotations[AnnotationNodeAddressCIDRs] = "10.0.0.0/33"
	if _, err := FactsOf(c); err == nil || !strings.Contains(err.Error(), "annotation "+AnnotationNodeAddressCIDRs) {
		t.Errorf("a bad annotation: %v", err)
	}
}
