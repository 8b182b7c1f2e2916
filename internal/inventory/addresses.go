package inventory

import (
	"fmt"
	"net/netip"
	"strings"
)

// AddressPolicy says which addresses winnode may open an SSH connection to.
// An address in windows-instances or on a WindowsInstance is whatever the
// person who wrote it typed: without a policy, winnode (running inside the
// cluster, with the operator's SSH key) would connect wherever it is told,
// including places that are not Windows hosts at all:
//   - loopback (127.0.0.0/8, "localhost"): the operator's own pod;
//   - link-local (169.254.0.0/16): where clouds serve instance metadata
//     and credentials (169.254.169.254);
//   - the Service range: a Service's ClusterIP, which load-balances to pods,
//     so the "host" would be whichever pod answers;
//   - names in the cluster's DNS (*.svc, *.<cluster domain>): the same.
//
// Such names are refused, and such addresses unless they are inside one of
// Allowed (--allow-addresses), as the demo's simulated hosts on loopback
// addresses are. The address a connection really goes to, after name
// resolution, is checked too (CheckDial).
type AddressPolicy struct {
	// Allowed (--allow-addresses) are CIDRs whose addresses are never
	// refused.
	Allowed []netip.Prefix
	// ServiceCIDRs (--service-cidr) is the cluster's Service range.
	ServiceCIDRs []netip.Prefix
	// ClusterDomain is the cluster's DNS domain ("" is cluster.local).
	ClusterDomain string
}

// AllowAddressesHelp is the help of --allow-addresses, shared by the
// operator and winnodectl.
const AllowAddressesHelp = "comma-separated CIDRs of host addresses to connect to even though they are loopback, link-local (cloud metadata) or in the Service range (default: none)"

// CheckAddress checks a normalized host address (NormalizeAddress) before
// any connection: an IPv4 address as CheckIP does; a name in the cluster's
// DNS, or "localhost", is never a Windows host's and is refused (a host is
// named by its own address or DNS name; --allow-addresses permits
// addresses, not names).
func (p AddressPolicy) CheckAddress(address string) error {
	if ip, err := netip.ParseAddr(address); err == nil {
		return p.CheckIP(ip)
	}
	if why := p.internalName(address); why != "" {
		return fmt.Errorf("address %s is %s, not a Windows host's: name the host by its own address or DNS name (--allow-addresses permits addresses, not names)", address, why)
	}
	return nil
}

// CheckDial checks the IP a connection to address really goes to, after
// name resolution: so a DNS name cannot lead where an address may not.
func (p AddressPolicy) CheckDial(address string, ip netip.Addr) error {
	if err := p.CheckAddress(address); err != nil {
		return err
	}
	if err := p.CheckIP(ip); err != nil {
		if address != ip.String() {
			return fmt.Errorf("%s resolves to %w", address, err)
		}
		return err
	}
	return nil
}

// CheckIP refuses an unspecified, multicast or broadcast IP always, and a
// loopback, link-local or Service-range IP outside Allowed.
func (p AddressPolicy) CheckIP(ip netip.Addr) error {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid() || ip.IsUnspecified():
		// 0.0.0.0 and :: connect to the machine the operator runs on.
		return fmt.Errorf("%s is the unspecified address, not a host's: winnode never connects to it", ip)
	case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%s is a multicast or broadcast address, not a host's: winnode never connects to it", ip)
	}
	if inPrefixes(p.Allowed, ip) {
		return nil
	}
	var why string
	switch {
	case ip.IsLoopback():
		why = "a loopback address (the operator's own machine)"
	case ip.IsLinkLocalUnicast():
		why = "a link-local address (169.254.0.0/16, where clouds serve instance metadata)"
	case inPrefixes(p.ServiceCIDRs, ip):
		why = fmt.Sprintf("in the cluster's Service range %v (a Service, not a host)", p.ServiceCIDRs)
	default:
		return nil
	}
	return fmt.Errorf("%s is %s; winnode connects only to Windows hosts: if this is one, permit it with --allow-addresses", ip, why)
}

// internalName says why a name is not a host's own ("" when it may be).
func (p AddressPolicy) internalName(name string) string {
	domain := p.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	switch {
	case name == "localhost" || strings.HasSuffix(name, ".localhost"):
		return "a name of the loopback address (RFC 6761)"
	case name == "svc" || strings.HasSuffix(name, ".svc") || strings.Contains(name, ".svc."):
		return "a name of a cluster Service (*.svc)"
	case name == domain || strings.HasSuffix(name, "."+domain):
		return fmt.Sprintf("a name in the cluster's DNS domain %s", domain)
	}
	return ""
}

func inPrefixes(prefixes []netip.Prefix, ip netip.Addr) bool {
	for _, pr := range prefixes {
		if pr.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// ParseCIDRs parses a flag's comma-separated CIDRs ("" is none), naming the
// flag in its error.
func ParseCIDRs(flagName, value string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(value, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		pr, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %q is not a CIDR such as 10.0.0.0/24", flagName, value, s)
		}
		out = append(out, pr.Masked())
	}
	return out, nil
}
