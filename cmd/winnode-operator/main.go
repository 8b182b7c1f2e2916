// Command winnode-operator turns Windows hosts into Kubernetes worker nodes:
// it runs the controllers of internal/controller (controller.NewManager) in
// a controller-runtime manager with leader election, health probes and
// Prometheus metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/preflight"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

// LeaderElectionID names the Lease that elects the active replica.
const LeaderElectionID = "winnode-operator-lock"

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "winnode-operator:", err)
		os.Exit(1)
	}
}

// run starts the operator with the command-line args and returns when ctx
// ends (SIGINT/SIGTERM in main) or the manager fails.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("winnode-operator", flag.ContinueOnError)
	f := bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts, err := f.controllerOptions()
	if err != nil {
		return err
	}
	if *f.showVersion {
		fmt.Fprintln(stdout, version)
		return nil
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	return start(ctx, f, opts)
}

// start makes the manager of the controllers with opts, its endpoints and
// leader election from f, and runs it until ctx ends.
func start(ctx context.Context, f *operatorFlags, opts controller.Options) error {
	log := ctrl.Log.WithName("setup")
	cfg, err := restConfig(*f.kubeconfig)
	if err != nil {
		return err
	}
	// The scheme and the cache (namespaced objects in the operator namespace
	// only) are controller.NewManager's.
	mgr, err := controller.NewManager(cfg, managerOptions(*f.metricsAddr, *f.probeAddr, f.leader, *f.namespace), opts)
	if err != nil {
		return err
	}
	if err := addProbes(mgr); err != nil {
		return err
	}
	log.Info("starting", "version", version, "namespace", opts.Namespace, "payloadDir", opts.PayloadDir, "joinCredentials", opts.JoinCredentials)
	return mgr.Start(ctx)
}

// addProbes serves /healthz and /readyz (--health-probe-bind-address).
func addProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", healthz.Ping)
}

// managerOptions are the manager's endpoints and its leader election (a
// Lease in the operator namespace).
func managerOptions(metricsAddr, probeAddr string, leader leaderElection, namespace string) ctrl.Options {
	o := ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: namespace,
		// On shutdown the manager first stops its controllers, then gives up
		// the Lease, so a new replica takes over at once without overlapping
		// a configuration still running here.
		LeaderElectionReleaseOnCancel: true,
	}
	leader.apply(&o) // leader.go
	return o
}

// restConfig is the cluster to talk to: --kubeconfig, else in-cluster, else
// $KUBECONFIG or ~/.kube/config.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		// ctrl.GetConfig reads the kubeconfig named by this variable.
		if err := os.Setenv("KUBECONFIG", kubeconfig); err != nil {
			return nil, err
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to (in-cluster config or --kubeconfig): %w", err)
	}
	return cfg, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// checkFlags checks the flags that take one of a few values or a bound
// (--max-unavailable, --max-concurrent-configurations,
// --pull-join-timeout) and the leader election's timings (leader.go), and
// returns the join credentials' mode, the platform and the canonical
// --hybrid-cluster-cidr.
func checkFlags(joinCreds, network, platformFlag, hybridCIDR string, maxUnavailable, maxConcurrent int, pullJoin time.Duration, leader leaderElection) (bootstrap.Mode, platform.Platform, string, error) {
	if err := leader.check(); err != nil {
		return "", "", "", err
	}
	joinMode, err := bootstrap.ParseMode(joinCreds)
	if err != nil {
		return "", "", "", fmt.Errorf("--join-credentials: %w", err)
	}
	if _, err := configure.ParseNetwork(network); err != nil {
		return "", "", "", fmt.Errorf("--network: %w", err)
	}
	plat, err := platform.Parse(platformFlag)
	if err != nil {
		return "", "", "", fmt.Errorf("--platform: %w", err)
	}
	hybrid, err := configure.ParseHybridClusterCIDR(hybridCIDR)
	if err != nil {
		return "", "", "", fmt.Errorf("--hybrid-cluster-cidr: %w", err)
	}
	if maxUnavailable < 1 {
		return "", "", "", fmt.Errorf("--max-unavailable %d: want 1 or more (upgrades that restart services would never start)", maxUnavailable)
	}
	if maxConcurrent < 0 {
		return "", "", "", fmt.Errorf("--max-concurrent-configurations %d: want 0 (no cap) or more", maxConcurrent)
	}
	if err := checkPullJoinTimeout(pullJoin); err != nil {
		return "", "", "", err
	}
	return joinMode, plat, hybrid, nil
}

// pullJoinTimeoutHelp is --pull-join-timeout's help.
const pullJoinTimeoutHelp = "how long a Cluster API Pull-mode Machine may go without a nodeRef after its bootstrap data is written before its WinnodeConfig says NodeJoinTimedOut, pointing at the host's logs (a host that joins later is still taken; at least 1m)"

// minPullJoinTimeout is the shortest --pull-join-timeout: a Windows host
// cannot boot, run its bootstrap data and join faster, so a shorter one
// would only report every Machine as timed out.
const minPullJoinTimeout = time.Minute

// checkPullJoinTimeout checks --pull-join-timeout.
func checkPullJoinTimeout(d time.Duration) error {
	if d < minPullJoinTimeout {
		return fmt.Errorf("--pull-join-timeout %s: want %s or more (a Windows host boots, runs its bootstrap data and joins in minutes; the default is %s)", d, minPullJoinTimeout, capibootstrap.DefaultJoinTimeout)
	}
	return nil
}

// hostFlags checks the flags of what hosts are given and checked:
// --log-file-size and --log-file-age, --container-runtime,
// --skip-preflight and --min-free-disk-gib.
func hostFlags(logSize string, logAge time.Duration, runtime, skip string, minFreeGiB int) (logrotate.Limits, winnodev1.ContainerRuntime, []string, error) {
	logs, err := logrotate.ParseLimits(logSize, logAge.String())
	if err != nil {
		return logs, "", nil, err
	}
	mode, err := inventory.ParseContainerRuntime(runtime)
	if err != nil {
		return logs, "", nil, fmt.Errorf("--container-runtime: %w", err)
	}
	skipped, unknown := preflight.ParseSkip(skip)
	if len(unknown) > 0 {
		return logs, "", nil, fmt.Errorf("--skip-preflight: %s is no pre-flight check (the checks: %s)", strings.Join(unknown, ", "), strings.Join(preflight.Names, ", "))
	}
	if minFreeGiB <= 0 {
		return logs, "", nil, fmt.Errorf("--min-free-disk-gib %d: give a positive number of GiB", minFreeGiB)
	}
	return logs, mode, skipped, nil
}
