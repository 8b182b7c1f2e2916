package standin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/simhns"
)

// flanneldFlags are the flags of flanneld the stand-in uses (flannel's
// Documentation/configuration.md); it accepts exactly the real flanneld's
// (flags.go).
type flanneldFlags struct {
	kubeSubnetMgr                       bool
	kubeconfig, netConfPath, subnetFile string
	iface, publicIP, kubeAPIURL         string
	ipMasq, version                     bool
	verbosity                           int
}

// flanneldFlagSet is the real flanneld's flag set, parsed as flanneld
// parses it (Go's flag package: -name or --name), with the stand-in's
// flags bound to f.
func flanneldFlagSet(f *flanneldFlags) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet("flanneld", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.BoolVar(&f.kubeSubnetMgr, "kube-subnet-mgr", false, "contact the Kubernetes API for subnet assignment instead of etcd")
	fs.StringVar(&f.kubeconfig, "kubeconfig-file", "", "kubeconfig file location")
	fs.StringVar(&f.kubeAPIURL, "kube-api-url", "", "Kubernetes API server URL")
	fs.StringVar(&f.netConfPath, "net-config-path", `C:\etc\kube-flannel\net-conf.json`, "path to the network configuration")
	fs.StringVar(&f.subnetFile, "subnet-file", `C:\run\flannel\subnet.env`, "filename where env variables (subnet, MTU, ...) will be written to")
	fs.StringVar(&f.iface, "iface", "", "interface to use (IP or name) for inter-host communication")
	fs.StringVar(&f.publicIP, "public-ip", "", "IP accessible by other nodes for inter-host communication")
	fs.BoolVar(&f.ipMasq, "ip-masq", false, "setup IP masquerade rule for traffic destined outside of overlay network")
	fs.BoolVar(&f.version, "version", false, "print version and exit")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity")
	return strictGoFlags(Flanneld, fs)
}

func parseFlanneldFlags(args []string) (*flanneldFlags, error) {
	var f flanneldFlags
	fs, err := flanneldFlagSet(&f)
	if err != nil {
		return nil, err
	}
	return &f, fs.Parse(args)
}

// flanneldVersion is the flannel release the stand-in answers --version
// with: the payload's (hack/payload/flannel/go.mod).
const flanneldVersion = "v0.28.10"

// flannelNetConf is flanneld's net-conf.json.
type flannelNetConf struct {
	Network string
	Backend struct {
		Type string
		Name string
		VNI  int
		Port int
	}
}

// runFlanneld is the simulated flanneld with the Kubernetes subnet manager
// and the VXLAN backend on Windows: it reads its network configuration,
// waits for its Node's spec.podCIDR, creates the Overlay HNS network of
// that subnet (as flannel's vxlan_windows.go does), writes the subnet file,
// marks its Node with flannel's annotations, and runs until stopped. The
// network stays when it stops, as on Windows. No VXLAN traffic flows.
func runFlanneld(ctx context.Context, args []string) int {
	log := newLogger("flanneld")
	f, err := parseFlanneldFlags(args)
	if err != nil {
		// flanneld parses with flag.ExitOnError and a usage function that
		// exits 0 (main.go): Go's flag package has printed
		// "flag provided but not defined: -x" and the usage, and flanneld
		// ends with code 0.
		return 0
	}
	if f.version {
		fmt.Fprintln(os.Stderr, flanneldVersion)
		return 0
	}
	log.verbose = f.verbosity
	if err := flanneld(ctx, log, f); err != nil {
		log.Errorf("%v", err)
		return 1
	}
	log.Infof("exiting cleanly")
	return 0
}

func flanneld(ctx context.Context, log *logger, f *flanneldFlags) error {
	if !f.kubeSubnetMgr {
		return errors.New("failed to create SubnetManager: no etcd endpoints reachable (simulated: only --kube-subnet-mgr is simulated)")
	}
	nodeName := os.Getenv("NODE_NAME")
	if nodeName == "" {
		return errors.New("failed to create SubnetManager: env variables POD_NAME and POD_NAMESPACE must be set")
	}
	conf, err := readFlannelNetConf(f.netConfPath)
	if err != nil {
		return err
	}
	cfg, err := loadKubeconfig(f.kubeconfig)
	if err != nil {
		return fmt.Errorf("failed to create SubnetManager: fail to create kubernetes config: %v", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create SubnetManager: %v", err)
	}
	log.Infof("using the Kubernetes subnet manager for node %s (simulated flanneld, VXLAN backend on Windows)", nodeName)
	subnet, err := waitPodCIDR(ctx, log, client, nodeName)
	if err != nil || ctx.Err() != nil {
		return err
	}
	if err := createOverlayNetwork(log, conf, subnet); err != nil {
		return err
	}
	if err := writeSubnetFile(f, conf, subnet); err != nil {
		return err
	}
	if err := annotateFlannelNode(ctx, client, nodeName, f, conf); err != nil {
		log.Warningf("failed to annotate node %s: %v", nodeName, err)
	}
	log.Infof("running: subnet %s of network %s on HNS network %q (simulated: no VXLAN traffic flows)", subnet, conf.Network, conf.Backend.Name)
	<-ctx.Done()
	return nil
}

// readFlannelNetConf reads and checks net-conf.json as flanneld does on
// Windows (vxlan_windows.go: "VNI ... must be greater than or equal to
// 4096 on Windows", "Port ... must be equal to 4789 on Windows").
func readFlannelNetConf(path string) (*flannelNetConf, error) {
	p, err := hostPath(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("failed to read net conf: %v", err)
	}
	var c flannelNetConf
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("failed to parse net conf %s: %v", path, err)
	}
	if _, err := netip.ParsePrefix(c.Network); err != nil {
		return nil, fmt.Errorf("failed to parse net conf %s: Network %q: %v", path, c.Network, err)
	}
	if c.Backend.Type != "vxlan" {
		return nil, fmt.Errorf("failed to create backend %q: only vxlan is simulated on Windows", c.Backend.Type)
	}
	if c.Backend.VNI < 4096 {
		return nil, fmt.Errorf("invalid VXLAN backend config. VNI [%d] must be greater than or equal to 4096 on Windows", c.Backend.VNI)
	}
	if c.Backend.Port != 4789 {
		return nil, fmt.Errorf("invalid VXLAN backend config. Port [%d] must be equal to 4789 on Windows", c.Backend.Port)
	}
	if c.Backend.Name == "" {
		c.Backend.Name = "vxlan0"
	}
	return &c, nil
}

// waitPodCIDR waits for the Node's spec.podCIDR (the kube subnet manager's
// lease), as flanneld does.
func waitPodCIDR(ctx context.Context, log *logger, client kubernetes.Interface, nodeName string) (netip.Prefix, error) {
	logged := false
	for {
		node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		switch {
		case ctx.Err() != nil:
			return netip.Prefix{}, nil
		case err != nil:
			log.Warningf("failed to get node %s: %v", nodeName, err)
		case node.Spec.PodCIDR != "":
			p, err := netip.ParsePrefix(node.Spec.PodCIDR)
			if err != nil {
				return netip.Prefix{}, fmt.Errorf("node %s: podCIDR %q: %v", nodeName, node.Spec.PodCIDR, err)
			}
			return p, nil
		case !logged:
			log.Infof("waiting for node %s to get a podCIDR (simulated)", nodeName)
			logged = true
		}
		select {
		case <-ctx.Done():
			return netip.Prefix{}, nil
		case <-time.After(time.Second):
		}
	}
}

// createOverlayNetwork creates (or finds, after a restart) the Overlay HNS
// network of the node's subnet, its gateway the subnet's first address.
func createOverlayNetwork(log *logger, c *flannelNetConf, subnet netip.Prefix) error {
	hns, err := simhns.FromEnv()
	if err != nil {
		return err
	}
	n, err := hns.CreateNetwork(simhns.Network{
		Name: c.Backend.Name, Type: simhns.TypeOverlay, VNI: c.Backend.VNI, Port: c.Backend.Port,
		Subnets: []simhns.Subnet{{AddressPrefix: subnet.Masked().String(), GatewayAddress: subnet.Masked().Addr().Next().String()}},
	})
	if err != nil {
		return fmt.Errorf("failed to create HNS network %s: %v", c.Backend.Name, err)
	}
	log.Infof("HNS network %s (%s) ready: Overlay, subnet %s, VNI %d (simulated HNS)", n.Name, n.ID, subnet, n.VNI)
	return nil
}

// writeSubnetFile writes flannel's subnet.env, as flanneld does.
func writeSubnetFile(f *flanneldFlags, c *flannelNetConf, subnet netip.Prefix) error {
	p, err := hostPath(f.subnetFile)
	if err != nil {
		return err
	}
	gw := netip.PrefixFrom(subnet.Masked().Addr().Next(), subnet.Bits())
	content := fmt.Sprintf("FLANNEL_NETWORK=%s\r\nFLANNEL_SUBNET=%s\r\nFLANNEL_MTU=1450\r\nFLANNEL_IPMASQ=%t\r\n", c.Network, gw, f.ipMasq)
	return os.WriteFile(p, []byte(content), 0o644)
}

// annotateFlannelNode sets the annotations flanneld's kube subnet manager
// writes on its own Node (backend type and data, public IP), which the
// other nodes' flanneld read to reach it.
func annotateFlannelNode(ctx context.Context, client kubernetes.Interface, nodeName string, f *flanneldFlags, c *flannelNetConf) error {
	publicIP := f.publicIP
	if publicIP == "" {
		publicIP = f.iface
	}
	backend, _ := json.Marshal(map[string]any{"VNI": c.Backend.VNI, "VtepMAC": "00:15:5d:00:00:01"})
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		"flannel.alpha.coreos.com/backend-type":        "vxlan",
		"flannel.alpha.coreos.com/backend-data":        string(backend),
		"flannel.alpha.coreos.com/kube-subnet-manager": "true",
		"flannel.alpha.coreos.com/public-ip":           publicIP,
	}}})
	_, err := client.CoreV1().Nodes().Patch(ctx, nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}
