package csrapproval

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/identity"
)

// checkServingNames checks every DNS and IP SAN of a serving CSR of wi. The
// host reports its own names and addresses (status.hostname, status.fqdn,
// status.addresses), so what it reports is not enough: a kubelet serving
// certificate is trusted by whoever connects to the names in it, and a host
// that could name kubernetes.default.svc, the API server, a Service IP or
// another node could pose as them. It allows:
//   - DNS (checkServingDNS): the node name; the Node's InternalDNS and
//     ExternalDNS addresses when a cloud controller manager set them
//     (Facts.CloudDNSNames); <node name>.<domain> for each of
//     Policy.NodeDNSDomains; never a name of the cluster's service domain,
//     of the API server's certificate, or another Node's name;
//   - IP: the IP in spec.address, and a reported address only inside
//     Policy.NodeAddressCIDRs; never an IP in the Service range or of the
//     API server's certificate, never an address another Node reports.
//
// It returns "" when every SAN is allowed, else why not.
func checkServingNames(req *x509.CertificateRequest, wi *winnodev1.WindowsInstance, facts Facts) string {
	for _, d := range req.DNSNames {
		if msg := checkServingDNS(d, wi, facts); msg != "" {
			return msg
		}
	}
	for _, raw := range req.IPAddresses {
		ip, ok := netip.AddrFromSlice(raw)
		if !ok {
			return fmt.Sprintf("IP SAN %v does not parse", raw)
		}
		if msg := checkServingIP(ip.Unmap(), wi, facts); msg != "" {
			return msg
		}
	}
	return ""
}

// checkServingDNS checks one DNS SAN of wi's serving CSR: what it may
// never be first, then what it may be.
func checkServingDNS(d string, wi *winnodev1.WindowsInstance, facts Facts) string {
	name, node := identity.NormalizeDNS(d), wi.Status.NodeName
	switch {
	case serviceDomainName(name, facts.Policy.ClusterDomain):
		return fmt.Sprintf("DNS SAN %q is in the cluster's service domain; a node's certificate never names a Service", d)
	case identity.IsAPIServerName(name, facts.APIServerNames):
		return fmt.Sprintf("DNS SAN %q is a name of the API server's serving certificate; a node's certificate never names the API server", d)
	case name != node && nodeExists(facts, name):
		return fmt.Sprintf("DNS SAN %q is the name of Node %s, not of WindowsInstance %s's node %s", d, name, wi.Name, node)
	}
	allowed := servingDNSNames(wi, facts)
	if slices.Contains(allowed, name) {
		return ""
	}
	return fmt.Sprintf("DNS SAN %q is not a name winnode can attribute to WindowsInstance %s's host: it may name %v (its node name, the DNS names a cloud controller manager gave its Node, and <node name>.<domain> for --node-dns-domains %v)",
		d, wi.Name, allowed, facts.Policy.NodeDNSDomains)
}

// servingDNSNames are the DNS names wi's serving certificate may carry, the
// never-rules aside: its node name, its Node's DNS addresses that a cloud
// controller manager set, and its node name under each listed domain. The
// FQDN the host reports counts only through the last: a host chooses its
// primary DNS suffix itself.
func servingDNSNames(wi *winnodev1.WindowsInstance, facts Facts) []string {
	node := wi.Status.NodeName
	if node == "" {
		return nil
	}
	names := []string{node}
	if facts.CloudDNSNames != nil {
		for _, n := range facts.CloudDNSNames(node) {
			names = append(names, identity.NormalizeDNS(n))
		}
	}
	for _, domain := range facts.Policy.NodeDNSDomains {
		names = append(names, node+"."+domain)
	}
	return names
}

// nodeExists says whether a Node of that name exists.
func nodeExists(facts Facts, name string) bool {
	if facts.NodeUID == nil {
		return false
	}
	_, ok := facts.NodeUID(name)
	return ok
}

// checkServingIP checks one IP SAN of wi's serving CSR.
func checkServingIP(ip netip.Addr, wi *winnodev1.WindowsInstance, facts Facts) string {
	if inAny(facts.Policy.ServiceCIDRs, ip) {
		return fmt.Sprintf("IP SAN %s is in the Service range %v (--service-cidr)", ip, facts.Policy.ServiceCIDRs)
	}
	if slices.ContainsFunc(facts.APIServerIPs, func(a netip.Addr) bool { return a.Unmap() == ip }) {
		return fmt.Sprintf("IP SAN %s is an address of the API server's serving certificate; a node's certificate never names the API server", ip)
	}
	if facts.NodeOfAddress != nil {
		if owner := facts.NodeOfAddress(ip); owner != "" && owner != wi.Status.NodeName {
			return fmt.Sprintf("IP SAN %s is an address of Node %s, not of WindowsInstance %s's node", ip, owner, wi.Name)
		}
	}
	if spec, err := netip.ParseAddr(wi.Spec.Address); err == nil && spec.Unmap() == ip {
		return ""
	}
	reported := false
	for _, a := range wi.Status.Addresses {
		if r, err := netip.ParseAddr(a); err == nil && r.Unmap() == ip {
			reported = true
		}
	}
	if !reported {
		return fmt.Sprintf("IP SAN %s is not an address of WindowsInstance %s's host (spec.address %s, reported %v)", ip, wi.Name, wi.Spec.Address, wi.Status.Addresses)
	}
	if !inAny(facts.Policy.NodeAddressCIDRs, ip) {
		return fmt.Sprintf("IP SAN %s is an address WindowsInstance %s's host reports, outside the allowed node address CIDRs %v; only spec.address %s is allowed without --node-address-cidrs",
			ip, wi.Name, facts.Policy.NodeAddressCIDRs, wi.Spec.Address)
	}
	return ""
}

// serviceDomainName reports whether a (normalized) name resolves, or may be
// resolved by a pod, to a Service or the API server: every name with a
// "svc" label (<svc>.<ns>.svc, ….svc.<domain>), every name in the cluster
// domain, and kubernetes / kubernetes.default (the API server's Service,
// through the search path).
func serviceDomainName(name, clusterDomain string) bool {
	if clusterDomain = identity.NormalizeDNS(clusterDomain); clusterDomain == "" {
		clusterDomain = DefaultClusterDomain
	}
	if name == clusterDomain || strings.HasSuffix(name, "."+clusterDomain) {
		return true
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "svc" {
			return true
		}
	}
	return labels[0] == "kubernetes" && (len(labels) == 1 || labels[1] == "default")
}
