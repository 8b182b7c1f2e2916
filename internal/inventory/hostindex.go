package inventory

import (
	"context"
	"strconv"
)

// The address conflict check compares one instance's endpoint with the
// others' (SameHost). Compared with every instance, it cost each retry of
// an unreachable host the whole fleet (docs/performance.md), so the
// operator files each instance in an index of its cache under
// EndpointKeys, and compares an endpoint only with the instances filed
// under its LookupKeys. The keys only narrow the comparison: SameHost
// still decides. Names are never resolved when filing (an index function
// runs in the cache's event handler, and what a name resolves to changes):
// a name is filed under its port's names key, which every lookup at that
// port reads, and resolved when compared, through the resolver's cache.

// EndpointKeys are the index keys an endpoint is filed under: its address
// once normalized (as written when it does not normalize) with its port,
// and, for a DNS name, the names key of its port.
func EndpointKeys(e Endpoint) []string {
	addr, isName := normalized(e.Address)
	keys := []string{endpointKey(e.Port, addr)}
	if isName {
		keys = append(keys, namesKey(e.Port))
	}
	return keys
}

// LookupKeys are the keys under which every endpoint that may reach the
// host of e is filed: e's own key, the names at its port (a name may
// resolve to e's IP, or to an IP of e's name), and, when e's address is a
// name, the keys of the IPs it resolves to now.
func LookupKeys(ctx context.Context, e Endpoint, resolve Resolver) []string {
	addr, isName := normalized(e.Address)
	keys := []string{endpointKey(e.Port, addr), namesKey(e.Port)}
	if isName && resolve != nil {
		for _, ip := range resolve(ctx, addr) {
			keys = append(keys, endpointKey(e.Port, ip.Unmap().String()))
		}
	}
	return keys
}

// normalized is an address as SameHost compares it (NormalizeAddress, or
// as written when it does not normalize), and whether it is a DNS name.
func normalized(address string) (string, bool) {
	n, err := NormalizeAddress(address)
	if err != nil {
		return address, false
	}
	return n, !looksNumeric(n)
}

func endpointKey(port int32, address string) string {
	return "endpoint:" + strconv.Itoa(int(port)) + "/" + address
}

func namesKey(port int32) string { return "names:" + strconv.Itoa(int(port)) }
