// Command winsim-capi-world runs Cluster API's own core controllers, from
// sigs.k8s.io/cluster-api at the version this module pins, against the test
// world's API server — Cluster (with the ClusterCache it needs to reach the
// workload cluster), Machine, MachineSet and MachineDeployment — together
// with "winsim", a simulated infrastructure provider (WinsimCluster,
// WinsimMachine, WinsimMachineTemplate) whose machines are instances of the
// simulated cloud the test process serves, and WinsimControlPlane, a stand-in
// control-plane provider that reports the test world's running control plane.
//
// It is how winnode's tests see Cluster API Machines created, provisioned,
// linked to Nodes and deleted by the real Cluster API rather than by a
// stand-in; it runs in one controller-runtime manager, without webhooks,
// leader election, metrics or health probes (internal/testenv capi.go
// starts it). The workload cluster is the management cluster here: the
// Windows hosts join the same API server the controllers run against.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
)

// controllerName is the program's user agent and the name its informers
// report under, in the place of Cluster API's "cluster-api-controller-manager".
const controllerName = "winsim-capi-world"

// syncPeriod is Cluster API's default --sync-period.
const syncPeriod = 10 * time.Minute

// options are the program's flags.
type options struct {
	kubeconfig, cloudURL string
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		klog.Errorf("winsim-capi-world: %v", err)
		klog.Flush()
		os.Exit(1)
	}
}

// parseFlags reads the flags, klog's among them.
func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("winsim-capi-world", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("logtostderr", "true"); err != nil {
		return nil, err
	}
	o := &options{}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster, both management and workload cluster (required)")
	fs.StringVar(&o.cloudURL, "cloud-url", "", "base URL of the simulated cloud's HTTP API (required)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.kubeconfig == "" || o.cloudURL == "" {
		return nil, errors.New("--kubeconfig and --cloud-url are required")
	}
	return o, nil
}

// run builds the manager, adds Cluster API's controllers and the winsim
// providers' and runs them until SIGTERM or SIGINT.
func run(args []string) error {
	ctrl.SetLogger(klog.NewKlogr())
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	cloud, err := winsimcloud.New(o.cloudURL)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.UserAgent = remote.DefaultClusterAPIUserAgent(controllerName)
	workload, err := workloadKubeconfig(o.kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// As Cluster API's manager: Secrets cached only when labelled with a
		// cluster name (the kubeconfig Secrets the ClusterCache reads), and
		// the manager's client reads Secrets and ConfigMaps from the API
		// server.
		Cache:  setup.ManagerCacheOptions(scheme, controllerName, "", syncPeriod),
		Client: setup.ManagerClientOptions(),
		// Cluster API's controllers rate-limit each object to one
		// reconcile a second on controller-runtime's priority queue
		// (feature gates ReconcilerRateLimiting and PriorityQueue, both on
		// by default), as its manager sets up.
		Controller: config.Controller{UsePriorityQueue: ptr.To(feature.Gates.Enabled(feature.PriorityQueue))},
	})
	if err != nil {
		return fmt.Errorf("setting up the controller manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := addCoreControllers(ctx, mgr); err != nil {
		return err
	}
	if err := addWinsimProviders(mgr, cloud, cfg.Host, workload); err != nil {
		return err
	}
	klog.Infof("winsim-capi-world: Cluster API %s controllers (Cluster, Machine, MachineSet, MachineDeployment, ClusterCache) on all namespaces; "+
		"simulated winsim infrastructure and control-plane providers, instances in the simulated cloud at %s", capiVersion(), o.cloudURL)
	return mgr.Start(ctx)
}
