// Package controller holds the operator's controllers, one file each. They
// are thin: each reads objects, calls the package that does the work, and
// writes status and events.
//
//   - sources.go: the windows-instances ConfigMap → one WindowsInstance per
//     valid entry (the format and parser: internal/inventory);
//   - keys.go: the cloud-private-key Secret → the windows-user-data Secret
//     (the key's rules and loading: internal/sshkey);
//   - csr.go: approval of the kubelet CSRs of managed hosts (the decision:
//     internal/csrapproval);
//   - instance.go: WindowsInstance → configured, Ready node, and back (the
//     steps: internal/configure, the engine winnodectl runs too);
//   - upgrade.go: waking upgrades that wait for their turn in the rollout
//     (the rollout itself: configure.Rollout);
//   - metrics.go, events.go: what they report;
//   - the OpenShift Machine API source (Windows Machines → WindowsInstances)
//     lives in internal/machineapi; Setup adds it on OpenShift;
//   - the Cluster API bootstrap provider (WinnodeConfig → bootstrap-data
//     Secret) lives in internal/capibootstrap, its Machine source (Machines
//     it bootstraps → WindowsInstances) in internal/capisource; Setup adds
//     both when the cluster serves Cluster API;
//   - setup.go (this file): Setup wires every controller into a manager.
package controller

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/capisource"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/machineapi"
	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/sshkey"
)

// DefaultNamespace is the operator namespace when none is given.
const DefaultNamespace = "winnode-system"

// DefaultMaxConcurrent is the default of --max-concurrent-configurations.
const DefaultMaxConcurrent = 10

// DefaultMaxUnavailable is the default of --max-unavailable.
const DefaultMaxUnavailable = configure.DefaultMaxUnavailable

// Options configure Setup; cmd/winnode-operator fills them from its flags,
// the demo and the end-to-end tests directly.
type Options struct {
	// Namespace is the operator namespace: where the windows-instances
	// ConfigMap and the key and user data Secrets live (default winnode-system).
	Namespace string
	// PayloadDir is the payload folder (files and manifest.json).
	PayloadDir string
	// Payload is PayloadDir's manifest; nil: Setup loads it (payload.Load,
	// which checks every file's size and sha256).
	Payload *payload.Manifest
	// MaxConcurrent bounds the hosts configured at once (default 10).
	MaxConcurrent int
	// MaxUnavailable bounds the Ready nodes that upgrades restarting their
	// services take out of service at once (default 1; upgrade.go).
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
	// Platform is --platform (auto, openshift, kubernetes; "" is auto):
	// where cluster facts come from. Setup resolves auto once, from the API
	// server's discovery, and logs which and why.
	Platform platform.Platform
	// HybridClusterCIDR is the hybrid overlay's cluster network
	// (--hybrid-cluster-cidr), for ovn-hybrid.
	HybridClusterCIDR string
	// TuneInstance, when set, adjusts each instance Configurer (tests:
	// shorter timeouts).
	TuneInstance func(*configure.Configurer)
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
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
	return o
}

// Deps are what Setup builds once and hands to the controllers.
type Deps struct {
	// Kube talks to the API server directly (no cache): bootstrap tokens in
	// kube-system, Node checks, CSR approval.
	Kube kubernetes.Interface
	// Detector answers --join-credentials=auto once for the process.
	Detector *bootstrap.Detector
	// Signer loads the operator's current private key (sshkey.LoadSigner on
	// the manager's cached client), at each call, so a rotated key is used
	// at once.
	Signer func(ctx context.Context) (ssh.Signer, error)
	// Platform is the resolved platform (openshift or kubernetes) and
	// PlatformReason why; OpenShift reads OpenShift's configuration
	// objects (nil on kubernetes).
	Platform       platform.Platform
	PlatformReason string
	OpenShift      client.Reader
}

// Leader election (cmd/winnode-operator) keeps a Lease in the operator namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=winnode-system,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Setup registers every controller of the operator with mgr, whose cache
// must cover opts.Namespace for namespaced objects (cmd/winnode-operator
// restricts it to that namespace). It also registers the winnode_instances
// metric. The manager's scheme must include winnode.io/v1alpha1 and client-go's
// types.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts = opts.withDefaults()
	if opts.Payload == nil {
		if opts.PayloadDir == "" {
			return fmt.Errorf("no payload: set the payload folder (--payload-dir)")
		}
		m, err := payload.Load(opts.PayloadDir)
		if err != nil {
			return fmt.Errorf("loading the payload from %s: %w", opts.PayloadDir, err)
		}
		opts.Payload = m
	}
	kube, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("building a Kubernetes client: %w", err)
	}
	signers := &sshkey.SignerCache{}
	deps := Deps{
		Kube:     kube,
		Detector: &bootstrap.Detector{Kube: kube},
		Signer: func(ctx context.Context) (ssh.Signer, error) {
			return signers.Load(ctx, mgr.GetClient(), opts.Namespace)
		},
	}

	if deps.Platform, deps.PlatformReason, err = platform.Resolve(kube.Discovery(), opts.Platform); err != nil {
		return err
	}
	mgr.GetLogger().WithName("setup").Info("platform: "+string(deps.Platform), "why", deps.PlatformReason)
	if deps.Platform == platform.OpenShift {
		if deps.OpenShift, err = openshift.NewReader(mgr.GetConfig()); err != nil {
			return err
		}
	}

	if err := (&KeysReconciler{
		Client: mgr.GetClient(), Namespace: opts.Namespace,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the keys controller: %w", err)
	}
	if err := (&SourcesReconciler{
		Client: mgr.GetClient(), Namespace: opts.Namespace, Recorder: mgr.GetEventRecorder("winnode-sources"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the sources controller: %w", err)
	}
	if err := (&CSRApprover{
		Client: mgr.GetClient(), Kube: kube, Recorder: mgr.GetEventRecorder("winnode-csr-approver"),
		Policy: opts.CSRPolicy, JoinNamespace: opts.Namespace,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CSR approver: %w", err)
	}
	if err := mgr.Add(&AutoApprovalWarner{Kube: kube, Recorder: mgr.GetEventRecorder("winnode-csr-approver")}); err != nil {
		return fmt.Errorf("setting up the auto-approval check: %w", err)
	}
	if err := (&RuntimeClassReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RuntimeClass controller: %w", err)
	}
	if err := SetupInstanceReconciler(mgr, opts, deps); err != nil {
		return fmt.Errorf("setting up the instance reconciler: %w", err)
	}
	// On OpenShift, where the cluster serves the Machine API.
	if deps.Platform == platform.OpenShift {
		if err := machineapi.Setup(mgr, machineapi.Options{
			OperatorNamespace: opts.Namespace, UserDataSecret: UserDataSecret, UserDataKey: UserDataKey,
		}); err != nil {
			return fmt.Errorf("setting up the Machine API source: %w", err)
		}
	}
	// On only where the cluster serves cluster.x-k8s.io and
	// bootstrap.winnode.io; elsewhere it logs why and adds nothing.
	if err := capibootstrap.Setup(mgr, opts.Namespace); err != nil {
		return fmt.Errorf("setting up the Cluster API bootstrap provider: %w", err)
	}
	// Its Machines become WindowsInstances where it is on.
	if err := capisource.Setup(mgr); err != nil {
		return fmt.Errorf("setting up the Cluster API Machine source: %w", err)
	}
	return registerInstanceCollector(mgr.GetClient())
}

// What the instance reconciler and its engine (internal/configure) need,
// for config/rbac/role.yaml, which must equal the hand-written
// config/rbac/*.yaml (config's TestGeneratedRBACIsGranted). These markers
// stand apart from any declaration: controller-gen reads only
// package-level markers for RBAC, and ignores those in a function's doc
// comment. Nodes are patched (labels, annotations, cordon), never updated.
// +kubebuilder:rbac:groups=winnode.io,resources=windowsinstances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=winnode.io,resources=windowsinstances/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// The cluster DNS for the hosts' kubelets (internal/configure clusterDNS).
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,resourceNames=kubelet-config,verbs=get
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=services,resourceNames=kube-dns,verbs=get
// flannel's configuration, by name only (internal/configure network.go).
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=kube-flannel-cfg,verbs=get
// On OpenShift, the platform's configuration (internal/openshift): the
// newest rendered worker MachineConfig (listed, and watched with the
// ControllerConfig so that a new one reaches the hosts at once), the kubelet
// CA, the API server's internal URL, the networks, and the API server's CA
// where the rendered config has no kubeconfig, and the cluster's ID
// (ClusterVersion version). Discovery (--platform=auto) needs no permission.
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=controllerconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.openshift.io,resources=infrastructures;networks,verbs=get
// +kubebuilder:rbac:groups=config.openshift.io,resources=clusterversions,resourceNames=version,verbs=get
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,resourceNames=kube-root-ca.crt,verbs=get

// SetupInstanceReconciler registers the instance reconciler (instance.go).
// ---- The instance reconciler's owner maintains this function. ----
func SetupInstanceReconciler(mgr ctrl.Manager, opts Options, deps Deps) error {
	return (&InstanceReconciler{
		Client:                  mgr.GetClient(),
		Kube:                    deps.Kube,
		Signer:                  deps.Signer,
		KeySecret:               client.ObjectKey{Namespace: opts.Namespace, Name: sshkey.PrivateKeySecret},
		PayloadDir:              opts.PayloadDir,
		Payload:                 opts.Payload,
		Version:                 opts.Version,
		JoinCredentials:         opts.JoinCredentials,
		JoinNamespace:           opts.Namespace,
		Addresses:               opts.Addresses,
		Network:                 opts.Network,
		HybridClusterCIDR:       opts.HybridClusterCIDR,
		ServiceCIDR:             opts.CSRPolicy.ServiceCIDRs[0].String(),
		Detector:                deps.Detector,
		Platform:                deps.Platform,
		PlatformReason:          deps.PlatformReason,
		OpenShift:               deps.OpenShift,
		MaxConcurrentReconciles: opts.MaxConcurrent,
		MaxUnavailable:          opts.MaxUnavailable,
		RetryMax:                opts.RetryMax,
		Uploaded:                RecordUpload,
		SSHFailed:               RecordSSHFailure,
		Configured:              RecordConfiguration,
		Tune:                    opts.TuneInstance,
	}).SetupWithManager(mgr)
}
