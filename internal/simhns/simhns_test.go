//go:build unix

package simhns

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestNetworks(t *testing.T) {
	s := Open(filepath.Join(t.TempDir(), "C"))
	if _, err := s.Network("vxlan0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a network of an empty HNS: %v, want ErrNotFound", err)
	}
	n := Network{Name: "vxlan0", Type: TypeOverlay, VNI: 4096, Port: 4789,
		Subnets: []Subnet{{AddressPrefix: "10.244.1.0/24", GatewayAddress: "10.244.1.1"}}}
	created, err := s.CreateNetwork(n)
	if err != nil || created.ID == "" {
		t.Fatalf("CreateNetwork: %+v, %v", created, err)
	}
	if !regexp.MustCompile(`^00-15-5D-[0-9A-F]{2}-[0-9A-F]{2}-[0-9A-F]{2}$`).MatchString(created.DRMacAddress) {
		t.Errorf("an Overlay network's distributed router MAC %q is not a Hyper-V MAC in HNS's notation", created.DRMacAddress)
	}
	// A restarted flanneld creates it again: the same network.
	again, err := s.CreateNetwork(n)
	if err != nil || again.ID != created.ID || again.DRMacAddress != created.DRMacAddress {
		t.Errorf("creating the same network again: %+v, %v; want %s", again, err, created.ID)
	}
	got, err := s.Network("VXLAN0")
	if err != nil || got.ID != created.ID {
		t.Errorf("Network looks names up case-insensitively, as HNS: %+v, %v", got, err)
	}
	other := n
	other.Subnets = []Subnet{{AddressPrefix: "10.244.2.0/24", GatewayAddress: "10.244.2.1"}}
	if _, err := s.CreateNetwork(other); err == nil || !strings.Contains(err.Error(), "another configuration") {
		t.Errorf("a network of the same name with another subnet: %v", err)
	}
}

func TestRefusesWhatHNSRefuses(t *testing.T) {
	s := Open(filepath.Join(t.TempDir(), "C"))
	for name, n := range map[string]Network{
		"no name":         {Type: TypeOverlay, Subnets: []Subnet{{AddressPrefix: "10.0.0.0/24", GatewayAddress: "10.0.0.1"}}},
		"unknown type":    {Name: "x", Type: "Bridge", Subnets: []Subnet{{AddressPrefix: "10.0.0.0/24", GatewayAddress: "10.0.0.1"}}},
		"no subnet":       {Name: "x", Type: TypeOverlay},
		"bad prefix":      {Name: "x", Type: TypeOverlay, Subnets: []Subnet{{AddressPrefix: "10.0.0.0/33", GatewayAddress: "10.0.0.1"}}},
		"gateway outside": {Name: "x", Type: TypeOverlay, Subnets: []Subnet{{AddressPrefix: "10.0.0.0/24", GatewayAddress: "10.0.1.1"}}},
	} {
		if _, err := s.CreateNetwork(n); err == nil {
			t.Errorf("%s: accepted %+v", name, n)
		}
	}
	if nets, _ := s.Networks(); len(nets) != 0 {
		t.Errorf("refused networks were stored: %+v", nets)
	}
}
