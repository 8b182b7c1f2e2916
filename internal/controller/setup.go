// Package controller is the operator: NewManager builds its
// controller-runtime manager with every controller registered. Each
// controller has a package of its own under this folder; they are thin:
// each reads objects, calls the package that does the work, and writes
// status and events.
//
//   - sources: the windows-instances ConfigMap → one WindowsInstance per
//     valid entry (the format and parser: internal/inventory);
//   - keys: the cloud-private-key Secret → the windows-user-data Secret
//     (the key's rules and loading: internal/sshkey);
//   - csr: approval of the kubelet CSRs of managed hosts (the decision:
//     internal/csrapproval), and the warning about a cluster that approves
//     them before winnode checks them;
//   - instance: WindowsInstance → configured, Ready node, and back (the
//     steps: internal/configure, the engine winnodectl runs too), and the
//     wake-up of upgrades waiting for their turn in the rollout;
//   - runtimeclass: one RuntimeClass per Windows Server release;
//   - report: the events the controllers write one by one;
//   - optional: the parts that are on only where the cluster serves their
//     APIs: the OpenShift Machine API source (internal/machineapi, on
//     OpenShift), the Cluster API bootstrap provider
//     (internal/capibootstrap) and its Machine source (internal/capisource);
//   - setup.go (this file): NewManager, the one place that wires them;
//     metrics.go: the operator's metrics.
package controller

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/capisource"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller/csr"
	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/controller/instance"
	"github.com/winnode/winnode/internal/controller/keys"
	"github.com/winnode/winnode/internal/controller/optional"
	"github.com/winnode/winnode/internal/controller/runtimeclass"
	"github.com/winnode/winnode/internal/controller/sources"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/machineapi"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/workload"
)

// DefaultNamespace is the operator namespace when none is given.
const DefaultNamespace = "winnode-system"

// DefaultMaxUnavailable is the default of --max-unavailable.
const DefaultMaxUnavailable = configure.DefaultMaxUnavailable

// Options configure NewManager; cmd/winnode-operator fills them from its flags,
// the demo and the end-to-end tests directly.
type Options struct {
	// Namespace is the operator namespace: where the windows-instances
	// ConfigMap and the key and user data Secrets live (default winnode-system).
	Namespace string
	// PayloadDir is the payload folder (files and manifest.json).
	PayloadDir string
	// Payload is PayloadDir's manifest; nil: NewManager loads it (payload.Load,
	// which checks every file's size and sha256).
	Payload *payload.Manifest
	// MaxConcurrent caps the hosts configured at once
	// (--max-concurrent-configurations; 0: no cap, the machine's bound:
	// instance.ConfigurationsAtOnce).
	MaxConcurrent int
	// MaxUnavailable bounds the Ready nodes that upgrades restarting their
	// services take out of service at once (default 1; instance/upgrade.go).
	MaxUnavailable int
	// Version is the operator's version, written to configured nodes
	// (annotation winnode.io/version).
	Version string
	// RetryMax caps the backoff between retries of a failing instance (0: the
	// instance reconciler's default).
	RetryMax time.Duration
	// CSRPolicy is the administrator's CSR approval policy
	// (--node-address-cidrs, --service-cidr); a Policy without a Service
	// range gets csrapproval.DefaultServiceCIDR.
	CSRPolicy csrapproval.Policy
	// JoinCredentials is the form of the kubelets' join credentials
	// (--join-credentials: auto, bootstrap-token or service-account; "" is
	// auto). Join ServiceAccounts live in Namespace.
	JoinCredentials bootstrap.Mode
	// Addresses is the policy of host addresses the operator connects to
	// (--allow-addresses); a policy without a Service range gets
	// CSRPolicy's.
	Addresses inventory.AddressPolicy
	// Network is the pod network mode of Windows nodes (--network: auto,
	// flannel, ovn-hybrid, external; "" is auto).
	Network string
	// PullJoinTimeout is how long a Cluster API Pull-mode Machine may go
	// without a nodeRef after its bootstrap data is written before its
	// WinnodeConfig says NodeJoinTimedOut (0:
	// capibootstrap.DefaultJoinTimeout; the tests shorten it).
	PullJoinTimeout time.Duration
	// Platform is --platform (auto, openshift, kubernetes; "" is auto):
	// where cluster facts come from. NewManager resolves auto once, from the API
	// server's discovery, and logs which and why.
	Platform platform.Platform
	// HybridClusterCIDR is the hybrid overlay's cluster network
	// (--hybrid-cluster-cidr), for ovn-hybrid.
	HybridClusterCIDR string
	// Logs are the rotation limits of the hosts' service logs
	// (--log-file-size, --log-file-age); nil: logrotate.Defaults.
	Logs *logrotate.Limits
	// MaxAnswer (--max-host-answer), MinTransferRate (--min-transfer-rate)
	// and SlowTransferGrace (--slow-transfer-grace) bound what a host may
	// make the operator read and wait for (configure.Configurer; zero:
	// internal/host's defaults).
	MaxAnswer         int
	MinTransferRate   int
	SlowTransferGrace time.Duration
	// Resolve resolves host names for the address conflict check (nil: the
	// system's resolver, with a cache).
	Resolve inventory.Resolver
	// ContainerRuntime is the mode of new instances (--container-runtime:
	// Managed or Existing; "" is Managed).
	ContainerRuntime winnodev1.ContainerRuntime
	// TrustedCAConfigMap names the ConfigMap of the operator namespace
	// whose ca-bundle.crt the proxy needs trusted, on Kubernetes
	// (--trusted-ca-configmap; "": none).
	TrustedCAConfigMap string
	// SkipPreflight names the pre-flight checks skipped for every
	// instance (--skip-preflight); MinFreeDiskGiB is the disk check's
	// limit (--min-free-disk-gib; 0: 30 GiB).
	SkipPreflight  []string
	MinFreeDiskGiB int
	// Proxy is the cluster-wide proxy on Kubernetes (the operator's own
	// HTTP_PROXY, HTTPS_PROXY, NO_PROXY: configure.ProxyFromEnvironment).
	Proxy plan.ProxyFacts
	// TuneInstance, when set, adjusts each instance Configurer (tests:
	// shorter timeouts).
	TuneInstance func(*configure.Configurer)
}

// complete fills in the defaults and loads the payload.
func (o Options) complete() (Options, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.MaxUnavailable <= 0 {
		o.MaxUnavailable = DefaultMaxUnavailable
	}
	if len(o.CSRPolicy.ServiceCIDRs) == 0 {
		o.CSRPolicy.ServiceCIDRs = csrapproval.DefaultPolicy().ServiceCIDRs
	}
	if len(o.Addresses.ServiceCIDRs) == 0 {
		o.Addresses.ServiceCIDRs = o.CSRPolicy.ServiceCIDRs
	}
	if o.Addresses.ClusterDomain == "" {
		o.Addresses.ClusterDomain = o.CSRPolicy.ClusterDomain
	}
	if o.Resolve == nil {
		o.Resolve = inventory.NewResolver(30 * time.Second)
	}
	if o.Payload == nil {
		if o.PayloadDir == "" {
			return o, fmt.Errorf("no payload: set the payload folder (--payload-dir)")
		}
		m, err := payload.Load(o.PayloadDir)
		if err != nil {
			return o, fmt.Errorf("loading the payload from %s: %w", o.PayloadDir, err)
		}
		o.Payload = m
	}
	return o, nil
}

// Leader election (cmd/winnode-operator) keeps a Lease in the operator namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=winnode-system,resources=leases,verbs=get;list;watch;create;update;patch;delete

// NewManager builds the operator's manager on cfg with every controller
// registered, ready to start. mo holds what its caller decides (leader
// election, the metrics and health endpoints, the logger); NewManager
// sets the scheme and the cache:
//
//   - the scheme: client-go's types, winnode.io/v1alpha1, and the API types
//     of the optional parts that are on;
//   - the cache: without managedFields; namespaced objects (the
//     windows-instances ConfigMap, the key Secrets) in opts.Namespace
//     only, cluster-scoped ones
//     (WindowsInstances, Nodes, CSRs) everywhere, and what the optional
//     parts that are on watch elsewhere (optional.Part.Cache). Bootstrap
//     token Secrets in kube-system are read and written directly, never
//     cached.
//
// It also registers the winnode_instances metric.
func NewManager(cfg *rest.Config, mo ctrl.Options, opts Options) (ctrl.Manager, error) {
	opts, err := opts.complete()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a Kubernetes client: %w", err)
	}
	plat, why, err := platform.Resolve(kube.Discovery(), opts.Platform)
	if err != nil {
		return nil, err
	}
	log := mo.Logger
	if log.GetSink() == nil {
		log = ctrl.Log
	}
	log.WithName("setup").Info("platform: "+string(plat), "why", why)

	if mo.Scheme, err = scheme(); err != nil {
		return nil, err
	}
	mo.Cache.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	// No controller reads managedFields, and they are often the largest
	// part of a small object: a fleet's WindowsInstances are cached
	// without them. An update of an object read from the cache leaves
	// them as they are (the API server keeps managedFields a write does
	// not set).
	mo.Cache.DefaultTransform = cache.TransformStripManagedFields()
	// Cluster API Machines join their own workload clusters: the
	// connections to them, used by the parts and controllers below.
	workloads := &workload.Clusters{Namespace: opts.Namespace}
	mgr, err := optional.NewManager(cfg, mo, optionalParts(opts, plat, workloads)...)
	if err != nil {
		return nil, err
	}
	// One reader of the API server's certificate names, for the CSR
	// approver and the engine's node name check.
	apiCert := &csrapproval.APIServerCertificate{Config: cfg}
	if err := setupControllers(mgr, kube, opts, workloads, apiCert); err != nil {
		return nil, err
	}
	metrics, err := setupMetrics(mgr, opts, plat)
	if err != nil {
		return nil, err
	}
	if err := setupInstances(mgr, kube, opts, plat, why, workloads, apiCert, metrics); err != nil {
		return nil, fmt.Errorf("setting up the instance reconciler: %w", err)
	}
	return mgr, registerInstanceCollector(mgr.GetClient())
}

// scheme is the operator's scheme before the optional parts add theirs.
func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, winnodev1.AddToScheme(s)
}

// optionalParts are the parts that are on where the cluster serves their
// APIs: the Machine API source on OpenShift, the Cluster API bootstrap
// provider and its Machine source anywhere.
func optionalParts(opts Options, plat platform.Platform, workloads *workload.Clusters) []optional.Part {
	var parts []optional.Part
	if plat == platform.OpenShift {
		parts = append(parts, machineapi.Part(machineapi.Options{
			OperatorNamespace: opts.Namespace, UserDataSecret: keys.UserDataSecret, UserDataKey: keys.UserDataKey,
		}))
	}
	// The workload clusters' part comes first: the parts that act in a
	// Machine's workload cluster use it once it is set up.
	return append(parts, workload.Part(workloads, capibootstrap.Required, capibootstrap.TurnOn),
		capibootstrap.Part(opts.Namespace, workloads, capibootstrap.Pull{Version: opts.Version, Network: opts.Network, JoinTimeout: opts.PullJoinTimeout}), capisource.Part(workloads))
}

// setupControllers registers the controllers other than the instance
// reconciler; the CSR approver also approves in each workload cluster,
// where the windows-exporter Service and slices are kept too.
func setupControllers(mgr ctrl.Manager, kube kubernetes.Interface, opts Options, workloads *workload.Clusters, apiCert *csrapproval.APIServerCertificate) error {
	if err := (&keys.Reconciler{
		Client: mgr.GetClient(), Namespace: opts.Namespace,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the keys controller: %w", err)
	}
	if err := (&sources.Reconciler{
		Client: mgr.GetClient(), Namespace: opts.Namespace, Recorder: mgr.GetEventRecorder("winnode-sources"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the sources controller: %w", err)
	}
	approver := &csr.Approver{
		Client: mgr.GetClient(), Kube: kube, Recorder: mgr.GetEventRecorder("winnode-csr-approver"),
		Policy: opts.CSRPolicy, JoinNamespace: opts.Namespace, APIServer: apiCert,
	}
	if err := approver.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CSR approver: %w", err)
	}
	var pull exporter.PullNodes
	if workloads.On() {
		// Pull Machines' CSRs, in their workload clusters only; and their
		// nodes in those clusters' windows-exporter slices.
		p := &capibootstrap.PullMachines{Configs: mgr.GetClient(), Machines: mgr.GetAPIReader()}
		approver.Pull, pull = p, p
	}
	csr.WatchWorkloads(mgr, workloads, approver)
	watchWorkloadExporters(mgr, workloads, pull)
	if err := mgr.Add(&csr.AutoApprovalWarner{Kube: kube, Recorder: mgr.GetEventRecorder("winnode-csr-approver")}); err != nil {
		return fmt.Errorf("setting up the auto-approval check: %w", err)
	}
	if err := (&runtimeclass.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RuntimeClass controller: %w", err)
	}
	return nil
}

// setupMetrics registers the windows-exporter controller and returns what
// gives each node its exporter's certificate: on OpenShift the service CA
// (the Service asks the service-ca controller for it), elsewhere the CA
// the operator keeps (docs/metrics.md).
func setupMetrics(mgr ctrl.Manager, opts Options, plat platform.Platform) (configure.MetricsCertificates, error) {
	r := &exporter.Reconciler{Client: mgr.GetClient(), Namespace: opts.Namespace}
	var certs configure.MetricsCertificates
	if plat == platform.OpenShift {
		r.ServiceCA = true
		certs = &metricstls.ServiceCA{Client: mgr.GetClient(), Namespace: opts.Namespace, Service: exporter.ServiceName}
	} else {
		r.CA = &metricstls.Store{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Namespace: opts.Namespace}
		certs = r.CA
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the windows-exporter controller: %w", err)
	}
	return certs, nil
}

// setupInstances registers the instance reconciler, with what it needs
// built once for the process: the join credentials' detector, the
// operator's key loaded afresh at each call from the manager's cache (so a
// rotated key is used at once), and on OpenShift a reader of its
// configuration objects.
func setupInstances(mgr ctrl.Manager, kube kubernetes.Interface, opts Options, plat platform.Platform, why string, workloads *workload.Clusters, apiCert *csrapproval.APIServerCertificate, metrics configure.MetricsCertificates) error {
	var osReader client.Reader
	if plat == platform.OpenShift {
		var err error
		if osReader, err = openshift.NewReader(mgr.GetConfig()); err != nil {
			return err
		}
	}
	signers := &sshkey.SignerCache{}
	return (&instance.Reconciler{
		Client: mgr.GetClient(),
		Kube:   kube,
		Signer: func(ctx context.Context) (ssh.Signer, error) {
			return signers.Load(ctx, mgr.GetClient(), opts.Namespace)
		},
		KeySecret:               client.ObjectKey{Namespace: opts.Namespace, Name: sshkey.PrivateKeySecret},
		PayloadDir:              opts.PayloadDir,
		Payload:                 opts.Payload,
		Version:                 opts.Version,
		JoinCredentials:         opts.JoinCredentials,
		JoinNamespace:           opts.Namespace,
		Addresses:               opts.Addresses,
		Network:                 opts.Network,
		HybridClusterCIDR:       opts.HybridClusterCIDR,
		Logs:                    opts.Logs,
		ServiceCIDR:             opts.CSRPolicy.ServiceCIDRs[0].String(),
		Detector:                &bootstrap.Detector{Kube: kube},
		Platform:                plat,
		PlatformReason:          why,
		OpenShift:               osReader,
		MaxConcurrentReconciles: opts.MaxConcurrent,
		MaxUnavailable:          opts.MaxUnavailable,
		RetryMax:                opts.RetryMax,
		Uploaded:                RecordUpload,
		SSHFailed:               RecordSSHFailure,
		Configured:              RecordConfiguration,
		Resolve:                 opts.Resolve,
		APIServerNames:          apiCert.Names,
		MaxAnswer:               opts.MaxAnswer,
		MinTransferRate:         opts.MinTransferRate,
		SlowTransferGrace:       opts.SlowTransferGrace,
		ContainerRuntime:        opts.ContainerRuntime,
		Namespace:               opts.Namespace,
		TrustedCAConfigMap:      opts.TrustedCAConfigMap,
		SkipPreflight:           opts.SkipPreflight,
		MinFreeDiskGiB:          opts.MinFreeDiskGiB,
		Proxy:                   opts.Proxy,
		Tune:                    opts.TuneInstance,
		Workloads:               workloads,
		Metrics:                 metrics,
	}).SetupWithManager(mgr)
}
