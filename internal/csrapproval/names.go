package csrapproval

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// checkServingNames checks every DNS and IP SAN of a serving CSR of wi. The
// host reports its own names and addresses (status.hostname, status.fqdn,
// status.addresses), so what it reports is not enough: a kubelet serving
// certificate is trusted by whoever connects to the names in it, and a host
// that could name kubernetes.default.svc, a Service IP or another node's IP
// could pose as them. It allows:
//   - DNS: the node name, the FQDN when it is a valid DNS-1123 name, and the
//     DNS name the administrator wrote in spec.address; never a name in the
//     cluster's service domain (serviceDomainName);
//   - IP: the IP in spec.address, and a reported address only inside
//     Policy.NodeAddressCIDRs; never an IP in the Service range, never an
//     address another Node reports.
//
// It returns "" when every SAN is allowed, else why not.
func checkServingNames(req *x509.CertificateRequest, wi *winnodev1.WindowsInstance, facts Facts) string {
	dnsOK := allowedDNSNames(wi)
	for _, d := range req.DNSNames {
		name := normalizeDNS(d)
		if serviceDomainName(name, facts.Policy.ClusterDomain) {
			return fmt.Sprintf("DNS SAN %q is in the cluster's service domain; a node's certificate never names a Service", d)
		}
		if !dnsOK[name] {
			return fmt.Sprintf("DNS SAN %q is not a name of WindowsInstance %s's host (%v)", d, wi.Name, keys(dnsOK))
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

// checkServingIP checks one IP SAN of wi's serving CSR.
func checkServingIP(ip netip.Addr, wi *winnodev1.WindowsInstance, facts Facts) string {
	if inAny(facts.Policy.ServiceCIDRs, ip) {
		return fmt.Sprintf("IP SAN %s is in the Service range %v (--service-cidr)", ip, facts.Policy.ServiceCIDRs)
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

// allowedDNSNames: the node name (the validated, lower-cased hostname), the
// FQDN if it is a valid DNS-1123 name, and a DNS name in spec.address.
func allowedDNSNames(wi *winnodev1.WindowsInstance) map[string]bool {
	ok := map[string]bool{}
	for _, n := range []string{wi.Status.NodeName, wi.Status.FQDN} {
		if n = normalizeDNS(n); n != "" && len(validation.IsDNS1123Subdomain(n)) == 0 {
			ok[n] = true
		}
	}
	if _, err := netip.ParseAddr(wi.Spec.Address); err != nil && wi.Spec.Address != "" {
		ok[normalizeDNS(wi.Spec.Address)] = true // written by the administrator
	}
	return ok
}

func normalizeDNS(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// serviceDomainName reports whether a (normalized) name resolves, or may be
// resolved by a pod, to a Service or the API server: every name with a
// "svc" label (<svc>.<ns>.svc, ….svc.<domain>), every name in the cluster
// domain, and kubernetes / kubernetes.default (the API server's Service,
// through the search path).
func serviceDomainName(name, clusterDomain string) bool {
	if clusterDomain = normalizeDNS(clusterDomain); clusterDomain == "" {
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
