package csrapproval

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/winnode/winnode/internal/identity"
	"github.com/winnode/winnode/internal/inventory"
)

// DefaultServiceCIDR is the default of --service-cidr: kubeadm's default
// Service range (ClusterConfiguration networking.serviceSubnet).
const DefaultServiceCIDR = "10.96.0.0/12"

// DefaultClusterDomain is the cluster's DNS domain when none is configured
// (kubeadm's and the kubelet's default).
const DefaultClusterDomain = "cluster.local"

// Policy is what the administrator allows beyond winnode's own rules
// (operator flags; winnodectl add has the same).
type Policy struct {
	// NodeAddressCIDRs (--node-address-cidrs): a serving certificate may
	// carry an address the host reports (status.addresses) only inside one
	// of these. spec.address, which the administrator wrote, is always
	// allowed. Empty: spec.address only.
	NodeAddressCIDRs []netip.Prefix
	// ServiceCIDRs (--service-cidr): the Service range. No IP inside it is
	// ever approved (a certificate for a Service IP lets its holder pose as
	// that Service, kubernetes.default's first).
	ServiceCIDRs []netip.Prefix
	// ClusterDomain: names under it (and every *.svc name) are refused.
	// Empty: DefaultClusterDomain.
	ClusterDomain string
	// NodeDNSDomains (--node-dns-domains): a serving certificate may carry
	// <node name>.<domain> for each of these domains (the host's FQDN in
	// the administrator's DNS). Empty: none.
	NodeDNSDomains []string
}

// DefaultPolicy allows spec.address only and knows kubeadm's Service range.
func DefaultPolicy() Policy {
	return Policy{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix(DefaultServiceCIDR)}, ClusterDomain: DefaultClusterDomain}
}

// Facts are what Decide needs to know about the cluster besides the CSR and
// the WindowsInstances. The operator reads them from the API server (not
// from a cache of its own); winnodectl add the same way.
type Facts struct {
	// NodeUID says whether a Node of that name exists, and its UID
	// (callers answer true when unsure: a client CSR is then left alone).
	NodeUID func(name string) (uid string, exists bool)
	// CloudDNSNames are the InternalDNS and ExternalDNS addresses of a
	// Node, when something other than the node's own kubelet set them: a
	// cloud controller manager (LoadFacts reads them only where the
	// shipped ValidatingAdmissionPolicy keeps kubelets from writing them).
	// Nil: none are attributable.
	CloudDNSNames func(node string) []string
	// APIServerNames and APIServerIPs are the names and addresses of the
	// API server's serving certificate: never in a node's certificate.
	APIServerNames []string
	APIServerIPs   []netip.Addr
	// NodeOfAddress names the Node that reports an address ("" when none).
	// A serving certificate never carries another Node's address. Nil: no
	// Node has any address.
	NodeOfAddress func(ip netip.Addr) string
	// ApprovedClientCSRs names the CSRs for the kubelet client signer that
	// a credential (the requester's name and UID: a join ServiceAccount made
	// again for the same instance is a new one) already had approved. Nil:
	// none.
	ApprovedClientCSRs func(requester, uid string) []string
	// Policy is the administrator's.
	Policy Policy
	// JoinNamespace is where the join ServiceAccounts live: the operator's
	// namespace, from its configuration, never from a CSR.
	JoinNamespace string
}

// ParseCIDRs parses a flag's comma-separated CIDRs ("" is none): the one
// parser of CIDR flags, shared with the address policy.
func ParseCIDRs(flagName, value string) ([]netip.Prefix, error) {
	return inventory.ParseCIDRs(flagName, value)
}

func inAny(prefixes []netip.Prefix, ip netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// Flag help, shared by the operator and winnodectl add/upgrade so both say
// the same (docs/approval.md explains the rules).
const (
	NodeDNSDomainsHelp   = "comma-separated DNS domains: a kubelet serving certificate may also carry <node name>.<domain> for each (default: none, only the node name and the DNS names a cloud controller manager gave the Node)"
	NodeAddressCIDRsHelp = "comma-separated CIDRs: a kubelet serving certificate may also carry the addresses a host reports inside them (default: none, only the host's spec.address)"
	ServiceCIDRHelp      = "the cluster's Service range(s), comma-separated: no address inside is ever approved in a kubelet serving certificate"
)

// PolicyFromFlags builds the Policy of --node-address-cidrs,
// --service-cidr (empty: DefaultServiceCIDR; there is always a Service
// range) and --node-dns-domains.
func PolicyFromFlags(nodeAddressCIDRs, serviceCIDR, nodeDNSDomains string) (Policy, error) {
	p := DefaultPolicy()
	var err error
	if p.NodeDNSDomains, err = ParseDNSDomains(nodeDNSDomains); err != nil {
		return Policy{}, err
	}
	if p.NodeAddressCIDRs, err = ParseCIDRs("node-address-cidrs", nodeAddressCIDRs); err != nil {
		return Policy{}, err
	}
	services, err := ParseCIDRs("service-cidr", serviceCIDR)
	if err != nil {
		return Policy{}, err
	}
	if len(services) > 0 {
		p.ServiceCIDRs = services
	}
	return p, nil
}

// ParseDNSDomains parses --node-dns-domains: comma-separated DNS names
// ("" is none), normalized.
func ParseDNSDomains(value string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(value, ",") {
		if d = identity.NormalizeDNS(strings.TrimSpace(d)); d == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
			return nil, fmt.Errorf("--node-dns-domains %q: %q is not a DNS domain: %s", value, d, strings.Join(errs, "; "))
		}
		out = append(out, d)
	}
	return out, nil
}
