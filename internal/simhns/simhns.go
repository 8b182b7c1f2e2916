//go:build unix

// Package simhns is the simulated Host Networking Service (HNS) of a winsim
// host: the virtual networks and endpoints that Windows' container
// networking is made of. On Windows, HNS keeps them in its own store and
// programs use its API (HCN, `Get-HnsNetwork`); flanneld creates the
// overlay network it is configured for, the CNI plugins (win-overlay,
// win-bridge) attach each pod to a network they look up by name, and
// kube-proxy programs load balancers on it.
//
// The simulated store is a JSON file beside the simulated host's C:\
// (<state>/hns.json), out of reach of the host's file system as HNS's store
// is, shared by the programs of one host (the stand-ins for flanneld,
// containerd and the kubelet, and tests) under a file lock. Like simscm it
// holds no simulator, so the stand-ins reach it without linking winsim.
package simhns

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/winnode/winnode/internal/simscm"
)

// Network types, as HNS names them (Microsoft's "Windows container network
// drivers": Overlay for VXLAN overlays such as flannel's, L2Bridge for
// host-gw style networks, NAT for the default network).
const (
	TypeOverlay  = "Overlay"
	TypeL2Bridge = "L2Bridge"
	TypeNAT      = "NAT"
)

// Network is one HNS network, with the fields `Get-HnsNetwork` shows that
// winnode's programs use.
type Network struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	// Subnets are the address prefixes of the network, with their gateway
	// (the first address, as flanneld and hybrid-overlay create them).
	Subnets []Subnet `json:"subnets"`
	// VNI and Port are an Overlay network's VXLAN identifier and UDP port.
	VNI  int `json:"vni,omitempty"`
	Port int `json:"port,omitempty"`
	// DRMacAddress is an Overlay network's distributed router MAC, which
	// HNS assigns when it creates the network (its DrMacAddress network
	// policy, which hybrid-overlay-node reads and publishes on its Node).
	DRMacAddress string `json:"drMacAddress,omitempty"`
}

// Subnet is a network's address prefix and gateway.
type Subnet struct {
	AddressPrefix  string `json:"addressPrefix"`
	GatewayAddress string `json:"gatewayAddress"`
}

// ErrNotFound is HNS's answer for a network name it does not know
// (HCN's "Network name not found", 0x803b0012).
var ErrNotFound = errors.New("Network name not found. (simulated HNS, 0x803b0012)")

// Store is one simulated host's HNS.
type Store struct{ path string }

// Open is the HNS of the simulated host whose C:\ is root.
func Open(root string) *Store {
	return &Store{path: filepath.Join(filepath.Dir(filepath.Clean(root)), "hns.json")}
}

// FromEnv is the HNS of the simulated host this program runs on
// (simscm.EnvRoot set by the simulator); an error elsewhere.
func FromEnv() (*Store, error) {
	root := os.Getenv(simscm.EnvRoot)
	if root == "" {
		return nil, fmt.Errorf("the simulated HNS is reachable only on a winsim host (%s unset)", simscm.EnvRoot)
	}
	return Open(root), nil
}

// Networks lists the networks, by name.
func (s *Store) Networks() ([]Network, error) {
	var nets []Network
	err := s.locked(false, func(have *[]Network) error { nets = slices.Clone(*have); return nil })
	return nets, err
}

// Network looks one network up by name, as the CNI plugins do
// (case-insensitive, as HNS compares names); ErrNotFound when there is none.
func (s *Store) Network(name string) (Network, error) {
	nets, err := s.Networks()
	if err != nil {
		return Network{}, err
	}
	for _, n := range nets {
		if strings.EqualFold(n.Name, name) {
			return n, nil
		}
	}
	return Network{}, fmt.Errorf("network %q: %w", name, ErrNotFound)
}

// CreateNetwork creates n, or returns the network of that name when it
// exists with the same type and subnets (what flanneld does on a restart:
// it reuses a matching network). A network of that name with another
// configuration is an error, as flanneld reports it.
func (s *Store) CreateNetwork(n Network) (Network, error) {
	if err := n.validate(); err != nil {
		return Network{}, err
	}
	var out Network
	err := s.locked(true, func(have *[]Network) error {
		for _, h := range *have {
			if !strings.EqualFold(h.Name, n.Name) {
				continue
			}
			if h.Type != n.Type || !slices.Equal(h.Subnets, n.Subnets) || h.VNI != n.VNI {
				return fmt.Errorf("HNS network %q exists with another configuration (type %s, subnets %v): delete it first (simulated HNS)", h.Name, h.Type, h.Subnets)
			}
			out = h
			return nil
		}
		n.ID = networkID(n.Name, len(*have))
		if n.Type == TypeOverlay {
			n.DRMacAddress = drMAC(n.ID)
		}
		*have = append(*have, n)
		out = n
		return nil
	})
	return out, err
}

// validate refuses what HNS refuses: no name, an unknown type, a subnet
// that is not a prefix or whose gateway lies outside it.
func (n Network) validate() error {
	if strings.TrimSpace(n.Name) == "" {
		return errors.New("HNS network without a name (simulated HNS: The parameter is incorrect.)")
	}
	switch n.Type {
	case TypeOverlay, TypeL2Bridge, TypeNAT:
	default:
		return fmt.Errorf("HNS network %q: type %q is not one of Overlay, L2Bridge, NAT (simulated HNS: The parameter is incorrect.)", n.Name, n.Type)
	}
	if len(n.Subnets) == 0 {
		return fmt.Errorf("HNS network %q has no subnet (simulated HNS: The parameter is incorrect.)", n.Name)
	}
	for _, sub := range n.Subnets {
		prefix, err := netip.ParsePrefix(sub.AddressPrefix)
		if err != nil {
			return fmt.Errorf("HNS network %q: subnet %q: %v (simulated HNS)", n.Name, sub.AddressPrefix, err)
		}
		gw, err := netip.ParseAddr(sub.GatewayAddress)
		if err != nil || !prefix.Contains(gw) {
			return fmt.Errorf("HNS network %q: gateway %q is not inside subnet %s (simulated HNS)", n.Name, sub.GatewayAddress, sub.AddressPrefix)
		}
	}
	return nil
}

// networkID is a GUID-shaped ID, stable for a name and position.
func networkID(name string, n int) string {
	var h uint32 = 2166136261
	for _, b := range []byte(strings.ToLower(name)) {
		h = (h ^ uint32(b)) * 16777619
	}
	return fmt.Sprintf("%08X-0000-4000-8000-%012X", h, n+1)
}

// drMAC is an Overlay network's distributed router MAC: in the Hyper-V
// range (00-15-5D) that HNS allocates from, in HNS's notation, derived
// from the network's ID.
func drMAC(id string) string {
	var h uint32 = 2166136261
	for _, b := range []byte(id) {
		h = (h ^ uint32(b)) * 16777619
	}
	return fmt.Sprintf("00-15-5D-%02X-%02X-%02X", byte(h>>16), byte(h>>8), byte(h))
}

// locked runs fn on the store's networks under an exclusive file lock
// (shared when only reading), writing them back when write is true.
func (s *Store) locked(write bool, fn func(*[]Network) error) error {
	lock, err := os.OpenFile(s.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("simulated HNS: %w", err)
	}
	defer lock.Close()
	how := syscall.LOCK_SH
	if write {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(lock.Fd()), how); err != nil {
		return fmt.Errorf("simulated HNS: %w", err)
	}
	var nets []Network
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("simulated HNS: %w", err)
	default:
		if err := json.Unmarshal(data, &nets); err != nil {
			return fmt.Errorf("simulated HNS store %s: %w", s.path, err)
		}
	}
	if err := fn(&nets); err != nil || !write {
		return err
	}
	out, err := json.MarshalIndent(nets, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("simulated HNS: %w", err)
	}
	return os.Rename(tmp, s.path)
}
