package preflight

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/winnode/winnode/internal/plan"
)

// The checks the operator decides from what the host reported and what it
// knows itself.

// Clock limits: the CSR signer backdates the certificates it issues by 5
// minutes (kube-controller-manager's signer sets NotBefore to now minus
// 5 minutes, for clock skew), so a kubelet whose clock is behind by more
// than that sees its new client certificate as not yet valid and its TLS
// bootstrap fails; beyond a minute, a warning.
const (
	ClockFailSkew = 5 * time.Minute
	ClockWarnSkew = time.Minute
)

// CheckClock compares the host's clock with the operator's (now). A
// zero host clock (an agent that does not report it) cannot be checked.
func CheckClock(host, now time.Time) plan.PreflightResult {
	if host.IsZero() {
		return warn(Clock, "the clock check could not run: the agent did not report the host's clock")
	}
	skew := host.Sub(now).Round(time.Second)
	dir := "ahead of"
	if skew < 0 {
		skew, dir = -skew, "behind"
	}
	fix := "sync the host's clock (w32tm /resync, or point the Windows Time service at the cluster's NTP source)"
	switch {
	case skew > ClockFailSkew:
		return fail(Clock, "the host's clock is %s %s the operator's, more than the %s the certificate signer allows for: the kubelet's certificates would not be valid yet (or expire early); %s", skew, dir, ClockFailSkew, fix)
	case skew > ClockWarnSkew:
		return warn(Clock, "the host's clock is %s %s the operator's; %s", skew, dir, fix)
	}
	return pass(Clock, "the host's clock is within %s of the operator's", ClockWarnSkew)
}

// CheckNodeName reports the node-name refusal of issue 25's identity rules
// (internal/identity, configure's nodename.go) before anything is sent:
// refusal is that rule's error (nil: allowed).
func CheckNodeName(name string, refusal error) plan.PreflightResult {
	if refusal != nil {
		return fail(NodeName, "%v; give the host another name (Rename-Computer) and restart it", refusal)
	}
	return pass(NodeName, "node name %s is valid and no other node's", name)
}

// CheckDNS: the node name resolves, from the operator, to one of the
// host's addresses. A warning only: hosts listed by IP often have names
// nothing resolves, and the kubelet reports its addresses itself.
// resolved is what the lookup returned; lookupErr why it failed.
func CheckDNS(name string, resolved []string, lookupErr error, hostAddrs []string) plan.PreflightResult {
	fix := "add an A record (and its PTR) for the name in DNS, or ignore this when nothing needs the name"
	if lookupErr != nil {
		return warn(DNS, "node name %s does not resolve from the operator (%v); %s", name, lookupErr, fix)
	}
	for _, r := range resolved {
		a, err := netip.ParseAddr(r)
		if err != nil {
			continue
		}
		if slices.Contains(hostAddrs, a.Unmap().String()) {
			return pass(DNS, "node name %s resolves to the host's address %s", name, a.Unmap())
		}
	}
	return warn(DNS, "node name %s resolves to %s, none of the host's addresses (%s); %s", name, strings.Join(resolved, ", "), strings.Join(hostAddrs, ", "), fix)
}
