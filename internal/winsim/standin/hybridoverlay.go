package standin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simhns"
)

// What hybrid-overlay-node creates on Windows (ovn-kubernetes,
// go-controller/hybrid-overlay/pkg/controller/node_windows.go): a
// persistent base Overlay network on an unused subnet, so that creating
// the real one later does not cut the host's connectivity again, and the
// node's Overlay network on its hybrid subnet, VXLAN identifier 4097
// (types.HybridOverlayVNI), its gateway the subnet's first address.
const (
	hybridOverlayBaseNetwork = "BaseOVNKubernetesHybridOverlayNetwork"
	hybridOverlayBaseSubnet  = "100.64.0.0/30"
	hybridOverlayBaseGateway = "100.64.0.2"
	hybridOverlayVNI         = 4097
	hybridOverlayDefaultPort = 4789
)

// hybridOverlayFlags are the flags of hybrid-overlay-node the stand-in
// knows: its own (--node, --windows-service) and those of ovn-kubernetes'
// config package that a Windows node uses. The real program parses them
// with urfave/cli, which uses Go's flag package: -flag and --flag, a
// value after a space or "=", and an unknown flag is "flag provided but
// not defined". The stand-in parses them the same way.
type hybridOverlayFlags struct {
	node, kubeconfig, apiServer, token, caCert, logFile, configFile string
	windowsService                                                  bool
	vxlanPort, logLevel                                             int
	// The log's rotation (lumberjack's MaxSize in megabytes, MaxBackups,
	// MaxAge in days); the stand-in does not rotate its log.
	logMaxSize, logMaxBackups, logMaxAge int
}

func parseHybridOverlayFlags(args []string) (*hybridOverlayFlags, error) {
	var f hybridOverlayFlags
	fs := flag.NewFlagSet("hybrid-overlay-node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.node, "node", "", "The name of this node in the Kubernetes cluster.")
	fs.BoolVar(&f.windowsService, "windows-service", false, "Enables hybrid overlay to run as a Windows service. Ignored on Linux.")
	fs.StringVar(&f.kubeconfig, "k8s-kubeconfig", "", "absolute path to the Kubernetes kubeconfig file")
	fs.StringVar(&f.apiServer, "k8s-apiserver", "", "URL of the Kubernetes API server")
	fs.StringVar(&f.token, "k8s-token", "", "the Kubernetes API authentication token")
	fs.StringVar(&f.caCert, "k8s-cacert", "", "the absolute path to the Kubernetes API CA certificate")
	fs.StringVar(&f.logFile, "logfile", "", "path of a file to direct log output to")
	fs.IntVar(&f.logLevel, "loglevel", 4, "log verbosity and level")
	fs.IntVar(&f.logMaxSize, "logfile-maxsize", 100, "Maximum size in bytes of the log file before it gets rolled")
	fs.IntVar(&f.logMaxBackups, "logfile-maxbackups", 5, "Maximum number of old log files to retain")
	fs.IntVar(&f.logMaxAge, "logfile-maxage", 5, "Maximum number of days to retain old log files")
	fs.StringVar(&f.configFile, "config-file", "", "configuration file path")
	fs.IntVar(&f.vxlanPort, "hybrid-overlay-vxlan-port", hybridOverlayDefaultPort, "UDP port of the hybrid overlay's VXLAN tunnels")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return &f, nil
}

// runHybridOverlayNode is the simulated hybrid-overlay-node on Windows: it
// exits without its kubeconfig or its Node, creates the base network,
// waits for its Node's hybrid subnet (set by
// the cluster's hybrid overlay controller), creates the Overlay HNS network
// OVNKubernetesHybridOverlayNetwork on it (reusing a matching one after a
// restart, as the real program does), annotates its Node with the
// network's distributed router MAC, and runs until stopped. No VXLAN
// traffic flows and no tunnels to other nodes are programmed.
func runHybridOverlayNode(ctx context.Context, args []string) int {
	log := newLogger("hybrid-overlay-node")
	f, err := parseHybridOverlayFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "Incorrect Usage: %v\n", err)
		return 1
	}
	if f.logFile != "" {
		if err := log.toFile(f.logFile); err != nil {
			log.Errorf("%v", err)
			return 1
		}
	}
	if f.windowsService {
		if err := answerServiceManager(ctx, log, "hybrid-overlay-node"); err != nil {
			return 1
		}
	}
	if err := hybridOverlayNode(ctx, log, f); err != nil {
		log.Errorf("%v", err)
		return 1
	}
	log.Infof("exiting cleanly")
	return 0
}

func hybridOverlayNode(ctx context.Context, log *logger, f *hybridOverlayFlags) error {
	if f.node == "" {
		return errors.New("missing node name; use the 'node' flag to provide one")
	}
	if f.kubeconfig == "" {
		return errors.New("simulated: only --k8s-kubeconfig is simulated for reaching the API server")
	}
	cfg, err := loadKubeconfig(f.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The real node controller reads its Node once at start and ends the
	// program when it cannot (hybrid-overlay/pkg/controller/
	// node_windows.go, newNodeController: kube.GetNode), before it creates
	// the base network: a Node not registered yet is an exit, not a wait.
	if _, err := client.CoreV1().Nodes().Get(ctx, f.node, metav1.GetOptions{}); err != nil {
		return err
	}
	hns, err := simhns.FromEnv()
	if err != nil {
		return err
	}
	log.Infof("hybrid overlay node %s starting (simulated hybrid-overlay-node; windows-service=%t)", f.node, f.windowsService)
	if err := ensureBaseNetwork(log, hns); err != nil {
		return err
	}
	subnet, err := waitHybridSubnet(ctx, log, client, f.node)
	if err != nil || ctx.Err() != nil {
		return err
	}
	gateway := subnet.Addr().Next()
	n, err := hns.CreateNetwork(simhns.Network{
		Name: plan.HybridOverlayNetwork, Type: simhns.TypeOverlay, VNI: hybridOverlayVNI, Port: f.vxlanPort,
		Subnets: []simhns.Subnet{{AddressPrefix: subnet.String(), GatewayAddress: gateway.String()}},
	})
	if err != nil {
		return fmt.Errorf("unable to create the overlay network, error: %v", err)
	}
	log.Infof("overlay network '%s' (address prefix %s) with gateway address %s ready, ID %s (simulated HNS)", n.Name, subnet, gateway, n.ID)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		plan.HybridOverlayDRMACAnnotation: n.DRMacAddress,
	}}})
	if _, err := client.CoreV1().Nodes().Patch(ctx, f.node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		log.Errorf("failed to set DRMAC annotation on node: %v", err)
	}
	log.Infof("running: node %s on hybrid subnet %s, distributed router MAC %s (simulated: no VXLAN traffic flows)", f.node, subnet, n.DRMacAddress)
	<-ctx.Done()
	return nil
}

// ensureBaseNetwork creates the persistent base Overlay network unless it
// exists.
func ensureBaseNetwork(log *logger, hns *simhns.Store) error {
	if _, err := hns.Network(hybridOverlayBaseNetwork); err == nil {
		return nil
	}
	log.Infof("Creating the base overlay network '%s'.", hybridOverlayBaseNetwork)
	_, err := hns.CreateNetwork(simhns.Network{
		Name: hybridOverlayBaseNetwork, Type: simhns.TypeOverlay, VNI: hybridOverlayVNI + 1, Port: hybridOverlayDefaultPort,
		Subnets: []simhns.Subnet{{AddressPrefix: hybridOverlayBaseSubnet, GatewayAddress: hybridOverlayBaseGateway}},
	})
	if err != nil {
		return fmt.Errorf("unable to create the base overlay network, error: %v", err)
	}
	return nil
}

// waitHybridSubnet waits for the Node and its hybrid subnet annotation, as
// the real node controller does (it acts on the Node's add and update
// events).
func waitHybridSubnet(ctx context.Context, log *logger, client kubernetes.Interface, nodeName string) (netip.Prefix, error) {
	logged := false
	for {
		node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		switch {
		case ctx.Err() != nil:
			return netip.Prefix{}, nil
		case err != nil:
			log.Warningf("failed to get node %s: %v", nodeName, err)
		case node.Annotations[plan.HybridOverlaySubnetAnnotation] != "":
			v := node.Annotations[plan.HybridOverlaySubnetAnnotation]
			p, err := netip.ParsePrefix(v)
			if err != nil {
				return netip.Prefix{}, fmt.Errorf("error parsing node %s annotation %s=%q: %v", nodeName, plan.HybridOverlaySubnetAnnotation, v, err)
			}
			return p.Masked(), nil
		case !logged:
			log.Infof("waiting for node %s to get its hybrid overlay subnet (annotation %s; simulated)", nodeName, plan.HybridOverlaySubnetAnnotation)
			logged = true
		}
		select {
		case <-ctx.Done():
			return netip.Prefix{}, nil
		case <-time.After(time.Second):
		}
	}
}
