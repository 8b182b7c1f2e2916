package winsim

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simhns"
)

// SimulateClusterCNI does on the host what a cluster's own Windows CNI
// DaemonSet does on a Windows node (simulated: OVN-Kubernetes' node
// programs on OpenShift, Calico's elsewhere): it creates the pod network's
// HNS network, an L2Bridge over the node's pod subnet with the subnet's
// first address as gateway, and writes the network's CNI configuration
// into C:\k\cni\config, where containerd looks for one. winnode's network
// mode "external" waits for exactly these two (docs/networking.md); tests
// and the demo call this where the real cluster's DaemonSet would act.
func (h *Host) SimulateClusterCNI(network, subnet string) error {
	prefix, err := netip.ParsePrefix(subnet)
	if err != nil {
		return fmt.Errorf("simulated cluster CNI on %s: pod subnet %q: %w", h.id.Hostname, subnet, err)
	}
	if _, err := h.HNS().CreateNetwork(simhns.Network{Name: network, Type: simhns.TypeL2Bridge,
		Subnets: []simhns.Subnet{{AddressPrefix: prefix.String(), GatewayAddress: prefix.Addr().Next().String()}}}); err != nil {
		return fmt.Errorf("simulated cluster CNI on %s: %w", h.id.Hostname, err)
	}
	conf, err := h.Path(plan.CNIConfDir + `\10-` + network + `.conflist`)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		return err
	}
	h.log.Info("simulated cluster CNI: pod network ready", "network", network, "subnet", subnet)
	return os.WriteFile(conf, []byte(`{"cniVersion":"0.3.1","name":"`+network+`","plugins":[{"type":"`+network+`"}]}`), 0o644)
}
