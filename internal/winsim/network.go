package winsim

import (
	"fmt"
	"net/netip"
	"os"
)

// EnvNetwork names the environment variable that gives simulated hosts
// their addresses from a range other than loopback: an IPv4 prefix such as
// 10.200.0.0/16 whose every address is bindable and reachable here.
// hack/test-e2e.sh sets it and runs the tests in a network namespace of
// their own with a local route for the range ("ip route add local
// 10.200.0.0/16 dev lo", Linux's AnyIP).
//
// Why: the real kube-apiserver refuses a loopback address where a node's
// address must be reachable from elsewhere: its node proxy
// (/api/v1/nodes/NAME/proxy/...) allows no loopback or link-local address,
// nor does an EndpointSlice. Hosts of a private range pass both checks.
const EnvNetwork = "WINSIM_NETWORK"

// loopback is the default range: 127.0.0.0/8, bindable on any Linux
// machine without set-up.
var loopback = netip.MustParsePrefix("127.0.0.0/8")

// Network is the range simulated hosts take their addresses from:
// $WINSIM_NETWORK when set, else 127.0.0.0/8.
func Network() (netip.Prefix, error) {
	s := os.Getenv(EnvNetwork)
	if s == "" {
		return loopback, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("%s=%q: want an IPv4 prefix of at most 24 bits such as 10.200.0.0/16", EnvNetwork, s)
	}
	return p.Masked(), nil
}

// nthAddress is the n-th address of the network p (n counted from its
// first address), false when p has none.
func nthAddress(p netip.Prefix, n int) (netip.Addr, bool) {
	b := p.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return a, n >= 0 && p.Contains(a)
}
