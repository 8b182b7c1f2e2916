package main

import (
	"flag"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/platform"
)

// operatorFlags are winnode-operator's command-line flags (bindFlags),
// made into the controllers' options by controllerOptions once parsed.
type operatorFlags struct {
	namespace, payloadDir, metricsAddr, probeAddr, kubeconfig       *string
	nodeAddrCIDRs, nodeDNSDomains, serviceCIDR, allowAddrs, network *string
	platformFlag, hybridCIDR, logFileSize, runtimeFlag, trustedCA   *string
	skipPreflight, joinCreds                                        *string
	maxConcurrent, maxUnavailable, maxAnswer, minRate, minFreeDisk  *int
	slowGrace, logFileAge, pullJoin                                 *time.Duration
	showVersion                                                     *bool
	leader                                                          leaderElection
	zap                                                             zap.Options
}

// bindFlags defines the operator's flags on fs: its own, leader
// election's and the logger's (zap).
func bindFlags(fs *flag.FlagSet) *operatorFlags {
	f := &operatorFlags{}
	f.namespace = fs.String("namespace", envOr("WATCH_NAMESPACE", controller.DefaultNamespace), "operator namespace: the windows-instances ConfigMap and the cloud-private-key and windows-user-data Secrets (env WATCH_NAMESPACE)")
	f.payloadDir = fs.String("payload-dir", "/payload", "folder with the Windows payload files and their manifest.json")
	f.maxConcurrent = fs.Int("max-concurrent-configurations", 0, "caps the hosts configured at once (0: no cap; the operator configures as many as its cores and memory allow, 16 per core, and logs how many; deconfigurations are not counted)")
	f.maxUnavailable = fs.Int("max-unavailable", controller.DefaultMaxUnavailable, "Ready Windows nodes that upgrades restarting their services (cordon, drain, restart) take out of service at once")
	f.metricsAddr = fs.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 to disable)")
	f.probeAddr = fs.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.kubeconfig = fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster config, then $KUBECONFIG, then ~/.kube/config)")
	f.showVersion = fs.Bool("version", false, "print the version and exit")
	f.nodeAddrCIDRs = fs.String("node-address-cidrs", "", csrapproval.NodeAddressCIDRsHelp)
	f.nodeDNSDomains = fs.String("node-dns-domains", "", csrapproval.NodeDNSDomainsHelp)
	f.maxAnswer = fs.Int("max-host-answer", host.DefaultMaxOutput, "the most bytes read of a host's answer (the agent's info, apply and remove documents); more is an error naming the host")
	f.minRate = fs.Int("min-transfer-rate", host.DefaultMinTransferRate, "bytes per second an upload to a host must keep up over --slow-transfer-grace; slower fails the step with SlowHost and the host is retried with backoff (negative: no minimum)")
	f.slowGrace = fs.Duration("slow-transfer-grace", host.DefaultSlowTransferGrace, "the period over which --min-transfer-rate is judged, once an upload has run that long")
	f.serviceCIDR = fs.String("service-cidr", csrapproval.DefaultServiceCIDR, csrapproval.ServiceCIDRHelp)
	f.allowAddrs = fs.String("allow-addresses", "", inventory.AllowAddressesHelp)
	f.network = fs.String("network", configure.NetworkAuto, configure.NetworkHelp)
	f.platformFlag = fs.String("platform", string(platform.Auto), platform.Help)
	f.hybridCIDR = fs.String("hybrid-cluster-cidr", "", configure.HybridClusterCIDRHelp)
	f.logFileSize = fs.String("log-file-size", logrotate.FormatSize(logrotate.Defaults.Size), logrotate.SizeHelp)
	f.logFileAge = fs.Duration("log-file-age", logrotate.Defaults.Age, logrotate.AgeHelp)
	f.runtimeFlag = fs.String("container-runtime", "managed", inventory.ContainerRuntimeHelp+"; the mode of new instances (an instance's spec.containerRuntime says its own)")
	f.trustedCA = fs.String("trusted-ca-configmap", "", "on Kubernetes, a ConfigMap of the operator namespace whose ca-bundle.crt (PEM) the cluster's proxy needs trusted: added to each host's Trusted Root store (on OpenShift: the Proxy's spec.trustedCA)")
	f.skipPreflight = fs.String("skip-preflight", "", "pre-flight checks to skip for every instance, comma-separated (e.g. clock,dns; docs/troubleshooting.md lists them); an instance's annotation winnode.io/skip-preflight adds its own")
	f.minFreeDisk = fs.Int("min-free-disk-gib", plan.DefaultMinFreeGiB, "free space (GiB) the pre-flight disk check asks of each host's system drive")
	f.joinCreds = fs.String("join-credentials", string(bootstrap.ModeAuto), "the kubelets' join credentials: auto (a bootstrap token when the API server accepts one, else a token of a ServiceAccount in the operator namespace), bootstrap-token or service-account")
	f.pullJoin = fs.Duration("pull-join-timeout", capibootstrap.DefaultJoinTimeout, pullJoinTimeoutHelp)
	f.leader = bindLeaderElection(fs)
	f.zap.BindFlags(fs)
	return f
}

// controllerOptions checks the parsed flags and makes the controllers'
// options of them; an error names the first flag that is wrong.
func (f *operatorFlags) controllerOptions() (controller.Options, error) {
	joinMode, plat, hybridClusterCIDR, err := checkFlags(*f.joinCreds, *f.network, *f.platformFlag, *f.hybridCIDR, *f.maxUnavailable, *f.maxConcurrent, *f.pullJoin, f.leader)
	if err != nil {
		return controller.Options{}, err
	}
	logs, runtimeMode, skipped, err := hostFlags(*f.logFileSize, *f.logFileAge, *f.runtimeFlag, *f.skipPreflight, *f.minFreeDisk)
	if err != nil {
		return controller.Options{}, err
	}
	csrPolicy, err := csrapproval.PolicyFromFlags(*f.nodeAddrCIDRs, *f.serviceCIDR, *f.nodeDNSDomains)
	if err != nil {
		return controller.Options{}, err
	}
	allowed, err := inventory.ParseCIDRs("allow-addresses", *f.allowAddrs)
	if err != nil {
		return controller.Options{}, err
	}
	return controller.Options{
		Namespace:          *f.namespace,
		PayloadDir:         *f.payloadDir,
		MaxConcurrent:      *f.maxConcurrent,
		MaxUnavailable:     *f.maxUnavailable,
		Version:            version,
		CSRPolicy:          csrPolicy,
		JoinCredentials:    joinMode,
		Addresses:          inventory.AddressPolicy{Allowed: allowed},
		Network:            *f.network,
		Platform:           plat,
		HybridClusterCIDR:  hybridClusterCIDR,
		Logs:               &logs,
		MaxAnswer:          *f.maxAnswer,
		MinTransferRate:    *f.minRate,
		SlowTransferGrace:  *f.slowGrace,
		ContainerRuntime:   runtimeMode,
		TrustedCAConfigMap: *f.trustedCA,
		SkipPreflight:      skipped,
		MinFreeDiskGiB:     *f.minFreeDisk,
		PullJoinTimeout:    *f.pullJoin,
		// On Kubernetes, the cluster's proxy is the operator's own
		// environment (OLM sets it from the cluster's proxy).
		Proxy: configure.ProxyFromEnvironment(os.Getenv),
	}, nil
}
