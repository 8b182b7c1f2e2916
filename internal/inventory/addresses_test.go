package inventory

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

func TestAddressPolicy(t *testing.T) {
	services := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	strict := AddressPolicy{ServiceCIDRs: services}
	demo := AddressPolicy{ServiceCIDRs: services, Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, tc := range []struct {
		policy  AddressPolicy
		address string
		want    string // "" allowed, else a piece of the error
	}{
		{strict, "10.0.0.7", ""},
		{strict, "192.168.1.20", ""},
		{strict, "win-01.example.internal", ""},
		{strict, "127.0.0.1", "loopback"},
		{strict, "127.0.0.10", "loopback"},
		{strict, "169.254.169.254", "link-local"},
		{strict, "10.96.0.1", "Service range"},
		{strict, "10.111.2.3", "Service range"},
		{strict, "localhost", "loopback address"},
		{strict, "kubernetes.default.svc", "*.svc"},
		{strict, "kubernetes.default.svc.cluster.local", "*.svc"},
		{strict, "web.default.pod.cluster.local", "cluster.local"},
		{AddressPolicy{ClusterDomain: "corp.example"}, "x.ns.pod.corp.example", "corp.example"},
		{AddressPolicy{ClusterDomain: "corp.example"}, "x.cluster.local", ""},
		{demo, "127.0.0.10", ""},
		{demo, "169.254.169.254", "link-local"},
		{demo, "localhost", "loopback address"}, // names are never permitted
		{demo, "kubernetes.default.svc", "*.svc"},
		{AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}, ServiceCIDRs: services}, "10.96.0.1", ""},
	} {
		err := tc.policy.CheckAddress(tc.address)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %s refused: %v", tc.policy, tc.address, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--allow-addresses")):
			t.Errorf("%+v: %s: %v, want an error with %q naming --allow-addresses", tc.policy, tc.address, err, tc.want)
		}
	}
}

// TestAddressPolicyCheckDial: what a name resolves to decides, and a
// cluster name is never allowed.
func TestAddressPolicyCheckDial(t *testing.T) {
	services := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	strict := AddressPolicy{ServiceCIDRs: services}
	ip := netip.MustParseAddr
	if err := strict.CheckDial("win-01.example.internal", ip("169.254.169.254")); err == nil || !strings.Contains(err.Error(), "win-01.example.internal resolves to 169.254.169.254") {
		t.Errorf("a name resolving to the metadata address: %v", err)
	}
	if err := strict.CheckDial("win-01.example.internal", ip("10.0.0.7")); err != nil {
		t.Errorf("a name resolving to a host: %v", err)
	}
	open := AddressPolicy{ServiceCIDRs: services, Allowed: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}}
	if err := open.CheckDial("win.default.svc", ip("10.200.1.1")); err == nil || !strings.Contains(err.Error(), "*.svc") {
		t.Errorf("a Service name, even to an allowed address: %v", err)
	}
	if err := open.CheckDial("localhost", ip("127.0.0.1")); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("localhost: %v", err)
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := ParseCIDRs("allow-addresses", " 127.0.0.1/8, 10.0.0.0/24,")
	if err != nil || len(got) != 2 || got[0].String() != "127.0.0.0/8" {
		t.Errorf("ParseCIDRs = %v, %v", got, err)
	}
	if _, err := ParseCIDRs("allow-addresses", "10.0.0.1"); err == nil || !strings.Contains(err.Error(), "--allow-addresses") {
		t.Errorf("a bare address: %v, want an error naming the flag", err)
	}
}

// The unspecified, multicast and broadcast addresses are never a host's,
// whatever --allow-addresses says.
func TestAddressPolicyNeverUnspecified(t *testing.T) {
	all := AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	for _, a := range []string{"0.0.0.0", "::", "224.0.0.1", "255.255.255.255", "::ffff:0.0.0.0"} {
		if err := all.CheckAddress(a); err == nil || !strings.Contains(err.Error(), "never connects") {
			t.Errorf("%s: %v, want refused always", a, err)
		}
	}
	if err := all.CheckDial("win.example.com", netip.MustParseAddr("0.0.0.0")); err == nil || !strings.Contains(err.Error(), "resolves to") {
		t.Errorf("a name resolving to 0.0.0.0: %v", err)
	}
}

// A name and an IP of the same host, on the same port, are one host.
func TestSameHost(t *testing.T) {
	ctx := t.Context()
	names := map[string][]netip.Addr{
		"win-a.example.com": {netip.MustParseAddr("10.0.0.5")},
		"alias.example.com": {netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.5")},
	}
	resolve := func(_ context.Context, n string) []netip.Addr { return names[n] }
	for _, c := range []struct {
		a, b    Endpoint
		resolve Resolver
		want    bool
	}{
		{Endpoint{"10.0.0.5", 22}, Endpoint{"10.0.0.5", 22}, nil, true},
		{Endpoint{"Win-A.Example.com.", 22}, Endpoint{"win-a.example.com", 22}, nil, true},
		{Endpoint{"win-a.example.com", 22}, Endpoint{"10.0.0.5", 22}, resolve, true},
		{Endpoint{"win-a.example.com", 22}, Endpoint{"alias.example.com", 22}, resolve, true},
		{Endpoint{"win-a.example.com", 22}, Endpoint{"10.0.0.5", 22}, nil, false}, // unresolved names are names
		{Endpoint{"win-a.example.com", 22}, Endpoint{"10.0.0.5", 2222}, resolve, false},
		{Endpoint{"unknown.example.com", 22}, Endpoint{"10.0.0.5", 22}, resolve, false},
		{Endpoint{"10.0.0.6", 22}, Endpoint{"10.0.0.5", 22}, resolve, false},
	} {
		if got := SameHost(ctx, c.a, c.b, c.resolve); got != c.want {
			t.Errorf("SameHost(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
