package inventory

import (
	"context"
	"net/netip"
	"slices"
	"testing"
)

// The index keys must never hide a conflict: whenever SameHost says two
// endpoints reach one host, a lookup for either finds the other. And they
// must narrow: endpoints of different IPs, or ports, share no key.
func TestLookupKeysFindEverySameHost(t *testing.T) {
	ctx := t.Context()
	names := map[string][]netip.Addr{
		"win-a.example.com": {netip.MustParseAddr("10.0.0.5")},
		"alias.example.com": {netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.5")},
		"other.example.com": {netip.MustParseAddr("10.0.0.7")},
	}
	resolve := func(_ context.Context, n string) []netip.Addr { return names[n] }
	endpoints := []Endpoint{
		{"10.0.0.5", 22}, {"10.0.0.5", 2222}, {"10.0.0.6", 22}, {"10.0.0.9", 22},
		{"Win-A.Example.com.", 22}, {"win-a.example.com", 22}, {"alias.example.com", 22},
		{"other.example.com", 22}, {"unknown.example.com", 22}, {"10.0.0.256", 22}, {"::1", 22},
	}
	for _, r := range []Resolver{resolve, nil} {
		for _, a := range endpoints {
			for _, b := range endpoints {
				found := shareKey(LookupKeys(ctx, a, r), EndpointKeys(b))
				if SameHost(ctx, a, b, r) && !found {
					t.Errorf("resolver %v: %v and %v are one host, but a lookup for the first does not find the second (lookup %v, filed %v)",
						r != nil, a, b, LookupKeys(ctx, a, r), EndpointKeys(b))
				}
			}
		}
	}
	for _, c := range []struct{ a, b Endpoint }{
		{Endpoint{"10.0.0.5", 22}, Endpoint{"10.0.0.6", 22}},
		{Endpoint{"10.0.0.5", 22}, Endpoint{"10.0.0.5", 2222}},
		{Endpoint{"win-a.example.com", 22}, Endpoint{"10.0.0.5", 2222}},
	} {
		if shareKey(LookupKeys(ctx, c.a, resolve), EndpointKeys(c.b)) {
			t.Errorf("a lookup for %v reads %v, which cannot be the same host", c.a, c.b)
		}
	}
}

func shareKey(lookup, filed []string) bool {
	return slices.ContainsFunc(lookup, func(k string) bool { return slices.Contains(filed, k) })
}
