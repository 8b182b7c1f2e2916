package plan

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/winnode/winnode/internal/logrotate"
)

// OVN-Kubernetes' hybrid overlay on a Windows node (ovn-hybrid), as the
// Windows Machine Config Operator installs it
// (openshift/windows-machine-config-operator, pkg/windows/windows.go):
// hybrid-overlay-node.exe in C:\k, service hybrid-overlay-node after the
// kubelet, its log in C:\var\log\hybrid-overlay.
const (
	PayloadHybridOverlay          = "hybrid-overlay-node.exe"
	HybridOverlayService          = "hybrid-overlay-node"
	HybridOverlayLogDir           = `C:\var\log\hybrid-overlay`
	HybridOverlayLogFile          = HybridOverlayLogDir + `\hybrid-overlay.log`
	HybridOverlayNetwork          = "OVNKubernetesHybridOverlayNetwork"
	HybridOverlaySubnetAnnotation = "k8s.ovn.org/hybrid-overlay-node-subnet"
	// HybridOverlayDRMACAnnotation is what hybrid-overlay-node sets on its
	// Node once its network exists: the MAC of the network's distributed
	// router (ovn-kubernetes, go-controller/hybrid-overlay/pkg/types).
	HybridOverlayDRMACAnnotation = "k8s.ovn.org/hybrid-overlay-distributed-router-gateway-mac"
)

// hybridOverlayService runs hybrid-overlay-node with the node's own
// credentials (the kubeconfig the kubelet writes after its TLS bootstrap),
// after the kubelet, with the flags the Windows Machine Config Operator
// gives it but --windows-service: it runs through winnode-service.exe
// (wrapped.go), as flanneld does, for the same reason. At its start
// hybrid-overlay-node needs the kubeconfig (ovn-kubernetes'
// go-controller/pkg/config: "kubernetes kubeconfig file ... not found")
// and its registered Node (hybrid-overlay/pkg/controller/node_windows.go,
// newNodeController reads it), and exits without them; Windows starts it
// again only after its recovery delay (2 s, then 5, then 10), and the
// kubelet's TLS bootstrap and registration take that long. So the service
// first runs `winnode-agent pod-network --wait-only`, which waits, with
// the node's credentials, until the Node has its hybrid subnet: what the
// Windows Machine Config Operator waits for before it starts
// hybrid-overlay-node (pkg/nodeconfig, configureNetwork: "Otherwise the
// hybrid-overlay will fail to start"). Then hybrid-overlay-node creates
// the HNS network HybridOverlayNetwork on the subnet and annotates the
// Node with the network's gateway MAC. It still writes and rotates its own
// log (--logfile); the service's log, LogFile(HybridOverlayService), holds
// the wait and what hybrid-overlay-node writes to standard error.
func (in RenderInput) hybridOverlayService() Service {
	ho, _ := in.Payload.Lookup(PayloadHybridOverlay)
	agent, _ := in.Payload.Lookup(PayloadAgent)
	s := in.wrap(Service{
		Name:         HybridOverlayService,
		DisplayName:  "OVN-Kubernetes hybrid overlay (hybrid-overlay-node)",
		Dependencies: []string{KubeletService},
		StartType:    StartAuto,
		Recovery:     serviceRecovery,
		Environment:  in.proxyEnvironment(nil),
		// The flags of go-controller/hybrid-overlay/cmd/hybrid-overlay-node
		// (--node) and of go-controller/pkg/config (--k8s-kubeconfig,
		// --logfile).
	}, ho.HostPath, append([]string{
		"--node", NodeName(in.Host.Info.Hostname),
		"--k8s-kubeconfig", KubeconfigPath,
		"--logfile", HybridOverlayLogFile,
	}, hybridOverlayLogLimits(in.logLimits())...)...)
	s.Args = withBefore(s.Args, agent.HostPath, PodNetworkCommand, "--config="+PodNetworkPath, "--"+PodNetworkWaitOnly)
	return s
}

// hybridOverlayLogLimits are the plan's log limits as hybrid-overlay-node
// takes them: it rotates its own log with lumberjack (ovn-kubernetes'
// go-controller/pkg/config), whose --logfile-maxsize is in megabytes
// (2^20 bytes; rounded up, at least 1) and --logfile-maxage in days
// (rounded up; 0 keeps every copy). lumberjack cannot be told never to
// rotate: with a size of 0 the flag is left out and its default, 100 MB,
// holds. It also keeps at most --logfile-maxbackups copies (5 by default).
func hybridOverlayLogLimits(l logrotate.Limits) []string {
	var args []string
	if l.Size > 0 {
		args = append(args, "--logfile-maxsize", strconv.FormatInt((l.Size+1<<20-1)>>20, 10))
	}
	days := (l.Age + 24*time.Hour - 1) / (24 * time.Hour)
	return append(args, "--logfile-maxage", strconv.FormatInt(int64(days), 10))
}

// checkHybridOverlay refuses ovn-hybrid facts the plan cannot be made
// from: the hybrid cluster network and the Service range must be CIDRs, and
// the node's hybrid subnet (once known) an IPv4 subnet inside the hybrid
// cluster network with room for the gateway, the source VIP and pods.
func (n NetworkFacts) checkHybridOverlay() []error {
	var errs []error
	cluster, err := netip.ParsePrefix(n.ClusterCIDR)
	if err != nil {
		errs = append(errs, fmt.Errorf("ovn-hybrid: hybrid cluster CIDR %q is not a CIDR", n.ClusterCIDR))
	}
	if _, err := netip.ParsePrefix(n.ServiceCIDR); err != nil {
		errs = append(errs, fmt.Errorf("ovn-hybrid: Service CIDR %q is not a CIDR", n.ServiceCIDR))
	}
	if n.PodCIDR != "" {
		p, err := netip.ParsePrefix(n.PodCIDR)
		switch {
		case err != nil || !p.Addr().Is4() || p.Bits() > 29:
			errs = append(errs, fmt.Errorf("ovn-hybrid: node subnet %q is not an IPv4 subnet of at least 8 addresses", n.PodCIDR))
		case cluster.IsValid() && (!cluster.Contains(p.Addr()) || p.Bits() < cluster.Bits()):
			errs = append(errs, fmt.Errorf("ovn-hybrid: node subnet %s is not inside the hybrid cluster CIDR %s", p, cluster))
		}
	}
	if n.NetworkName != HybridOverlayNetwork {
		errs = append(errs, errors.New("ovn-hybrid: the network is "+HybridOverlayNetwork+", the name hybrid-overlay-node gives it"))
	}
	return errs
}
