package inventory

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Resolver resolves a DNS name to its IP addresses (nil when it does not
// resolve). The operator uses the system's (NewResolver); tests give
// their own names.
type Resolver func(ctx context.Context, name string) []netip.Addr

// Endpoint is where a host is reached: its address as written (an IP or a
// DNS name) and its SSH port.
type Endpoint struct {
	Address string
	Port    int32
}

// SameHost reports whether two endpoints reach the same host: the same
// port, and the same address once normalized, or addresses that resolve to
// a common IP (a name and an IP of one host are one host). resolve may be
// nil: names are then compared as written.
func SameHost(ctx context.Context, a, b Endpoint, resolve Resolver) bool {
	if a.Port != b.Port {
		return false
	}
	na, errA := NormalizeAddress(a.Address)
	nb, errB := NormalizeAddress(b.Address)
	if errA != nil || errB != nil {
		return a.Address == b.Address
	}
	if na == nb {
		return true
	}
	ipsA, ipsB := addressesOf(ctx, na, resolve), addressesOf(ctx, nb, resolve)
	for _, x := range ipsA {
		for _, y := range ipsB {
			if x.Unmap() == y.Unmap() {
				return true
			}
		}
	}
	return false
}

// addressesOf is a normalized address's IPs: itself, or what the name
// resolves to.
func addressesOf(ctx context.Context, address string, resolve Resolver) []netip.Addr {
	if ip, err := netip.ParseAddr(address); err == nil {
		return []netip.Addr{ip}
	}
	if resolve == nil {
		return nil
	}
	return resolve(ctx, address)
}

// NewResolver is the system's resolver with a cache of ttl: the conflict
// checks compare every instance's address with every other's, and a name
// is looked up once per ttl rather than once per comparison. A name that
// does not resolve is remembered as such for ttl too.
func NewResolver(ttl time.Duration) Resolver {
	type entry struct {
		ips []netip.Addr
		at  time.Time
	}
	var (
		mu    sync.Mutex
		cache = map[string]entry{}
	)
	return func(ctx context.Context, name string) []netip.Addr {
		mu.Lock()
		e, ok := cache[name]
		mu.Unlock()
		if ok && time.Since(e.at) < ttl {
			return e.ips
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
		if err != nil {
			ips = nil
		}
		mu.Lock()
		cache[name] = entry{ips: ips, at: time.Now()}
		mu.Unlock()
		return ips
	}
}
