package winsim

import (
	"net/netip"
	"testing"
)

func TestNetwork(t *testing.T) {
	for _, c := range []struct {
		env, want string
		err       bool
	}{
		{"", "127.0.0.0/8", false},
		{"10.200.0.0/16", "10.200.0.0/16", false},
		{"10.200.3.4/16", "10.200.0.0/16", false},
		{"10.200.0.0/25", "", true},
		{"fd00::/64", "", true},
		{"10.200.0.0", "", true},
		{"garbage", "", true},
	} {
		t.Setenv(EnvNetwork, c.env)
		got, err := Network()
		if (err != nil) != c.err || (err == nil && got.String() != c.want) {
			t.Errorf("%s=%q: %v, %v; want %s (error %v)", EnvNetwork, c.env, got, err, c.want, c.err)
		}
	}
}

func TestNthAddress(t *testing.T) {
	p := netip.MustParsePrefix("10.200.0.0/16")
	for n, want := range map[int]string{0: "10.200.0.0", 10: "10.200.0.10", 256: "10.200.1.0", 300: "10.200.1.44", 65535: "10.200.255.255"} {
		if a, ok := nthAddress(p, n); !ok || a.String() != want {
			t.Errorf("address %d of %s: %v %v, want %s", n, p, a, ok, want)
		}
	}
	for _, n := range []int{65536, -1} {
		if a, ok := nthAddress(p, n); ok {
			t.Errorf("address %d of %s: %v, want none", n, p, a)
		}
	}
}
