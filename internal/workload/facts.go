package workload

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/inventory"
)

// AnnotationNodeAddressCIDRs on a Cluster API Cluster: comma-separated
// CIDRs inside which a kubelet serving certificate of that cluster's
// Windows nodes may also carry the addresses a host reports (the
// operator's --node-address-cidrs, for that cluster alone). Absent: only
// the Machine's own address.
const AnnotationNodeAddressCIDRs = "winnode.io/node-address-cidrs"

// ReasonClusterNetworkInvalid: the Cluster's spec.clusterNetwork (or its
// annotation winnode.io/node-address-cidrs) holds a range that is not a
// CIDR.
const ReasonClusterNetworkInvalid = "ClusterNetworkInvalid"

// Facts are what a workload cluster is, from its Cluster API Cluster: what
// the operator's flags say of its own cluster, said by each Cluster of its
// own.
type Facts struct {
	// APIServer is the URL the hosts' kubelets join
	// (https://<spec.controlPlaneEndpoint>); "" while the Cluster has none.
	APIServer string
	// ServiceCIDRs are spec.clusterNetwork.services.cidrBlocks (kubeadm's
	// 10.96.0.0/12 when empty): no address in them is connected to or
	// approved in a kubelet certificate.
	ServiceCIDRs []netip.Prefix
	// PodCIDRs are spec.clusterNetwork.pods.cidrBlocks (none when empty).
	PodCIDRs []netip.Prefix
	// ClusterDomain is spec.clusterNetwork.serviceDomain (cluster.local
	// when empty).
	ClusterDomain string
	// NodeAddressCIDRs are the Cluster's AnnotationNodeAddressCIDRs.
	NodeAddressCIDRs []netip.Prefix
}

// FactsOf reads the facts of Cluster c; a range that is not a CIDR is an
// error naming its field.
func FactsOf(c *clusterv1.Cluster) (Facts, error) {
	f := Facts{ClusterDomain: c.Spec.ClusterNetwork.ServiceDomain}
	if f.ClusterDomain == "" {
		f.ClusterDomain = csrapproval.DefaultClusterDomain
	}
	if ep := c.Spec.ControlPlaneEndpoint; ep.Host != "" {
		port := ep.Port
		if port == 0 {
			port = 6443
		}
		f.APIServer = "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(int(port)))
	}
	var err error
	if f.ServiceCIDRs, err = cidrs("spec.clusterNetwork.services.cidrBlocks", c.Spec.ClusterNetwork.Services.CIDRBlocks); err != nil {
		return Facts{}, err
	}
	if len(f.ServiceCIDRs) == 0 {
		f.ServiceCIDRs = csrapproval.DefaultPolicy().ServiceCIDRs
	}
	if f.PodCIDRs, err = cidrs("spec.clusterNetwork.pods.cidrBlocks", c.Spec.ClusterNetwork.Pods.CIDRBlocks); err != nil {
		return Facts{}, err
	}
	var listed []string
	for _, s := range strings.Split(c.Annotations[AnnotationNodeAddressCIDRs], ",") {
		if s = strings.TrimSpace(s); s != "" {
			listed = append(listed, s)
		}
	}
	if f.NodeAddressCIDRs, err = cidrs("annotation "+AnnotationNodeAddressCIDRs, listed); err != nil {
		return Facts{}, err
	}
	return f, nil
}

func cidrs(field string, blocks []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, b := range blocks {
		p, err := netip.ParsePrefix(b)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %q is not a CIDR", field, i, b)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// CSRPolicy is the cluster's CSR approval policy (csrapproval.Policy).
func (f Facts) CSRPolicy() csrapproval.Policy {
	return csrapproval.Policy{NodeAddressCIDRs: f.NodeAddressCIDRs, ServiceCIDRs: f.ServiceCIDRs, ClusterDomain: f.ClusterDomain}
}

// AddressPolicy is the policy of host addresses the operator connects to
// for this cluster: the cluster's Service range and domain, and the
// addresses the operator allows wherever they are (--allow-addresses).
func (f Facts) AddressPolicy(allowed []netip.Prefix) inventory.AddressPolicy {
	return inventory.AddressPolicy{Allowed: allowed, ServiceCIDRs: f.ServiceCIDRs, ClusterDomain: f.ClusterDomain}
}

// ServiceCIDR is the cluster's first Service range, for the pod network's
// NAT exceptions and routes.
func (f Facts) ServiceCIDR() string { return f.ServiceCIDRs[0].String() }
