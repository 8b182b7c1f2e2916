// Package instance is the operator's instance controller: each
// WindowsInstance becomes a configured, Ready Windows node, and its host is
// cleaned when the instance is deleted (Reconciler; the steps are
// internal/configure's, the engine winnodectl runs too). upgrade.go wakes
// the upgrades that wait for their turn in the rollout.
package instance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller/report"
	"github.com/winnode/winnode/internal/identity"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/workload"
)

// Reconciler turns each WindowsInstance into a configured, Ready
// Windows node (configure.Configurer.Configure), and deconfigures its host
// when it is deleted (configure.Configurer.Deconfigure, behind finalizer
// winnode.io/deconfigure).
// It persists the status after every step, so an operator stopped at any
// point resumes where it was.
type Reconciler struct {
	// Client is the manager's client (WindowsInstances through the cache).
	Client client.Client
	// Reader reads from the API server (default: the manager's API
	// reader): an instance when the cache may be behind the last version
	// a pass wrote or read (fresh.go), a stored instance for a save that
	// met a conflict, and the rollout's count.
	Reader client.Reader
	// Kube talks to the API server directly (Nodes, Secrets, Pods).
	Kube     kubernetes.Interface
	Recorder events.EventRecorder
	// Signer returns the operator's current SSH key (the keys controller's
	// Secret cloud-private-key); an error says why there is none usable.
	Signer func(ctx context.Context) (ssh.Signer, error)
	// KeySecret names the key Secret, so that a change of key reconciles
	// every instance (key rotation). Empty: not watched.
	KeySecret client.ObjectKey

	PayloadDir string
	Payload    *payload.Manifest
	Version    string

	// MaxConcurrentReconciles caps the hosts configured at once
	// (--max-concurrent-configurations; 0: no cap): the number is the
	// machine's (ConfigurationsAtOnce, concurrency.go).
	MaxConcurrentReconciles int
	// Machine is the operator's cores and memory, which bound the
	// configurations at once (zero: ThisMachine).
	Machine Machine
	// MaxUnavailable bounds the Ready nodes that upgrades restarting their
	// services take out of service at once (--max-unavailable; default 1).
	MaxUnavailable int
	// RetryMax caps the backoff between retries of a failing instance
	// (default 2 minutes; the first retry comes after a second).
	RetryMax time.Duration
	// Metrics hooks (nil: not counted).
	Uploaded   func(bytes int64)
	SSHFailed  func(reason string)
	Configured func(time.Duration)
	// JoinCredentials, JoinNamespace and Detector are handed to each
	// Configurer (configure.Configurer has their meaning).
	JoinCredentials bootstrap.Mode
	JoinNamespace   string
	Detector        *bootstrap.Detector
	// Addresses is the address policy handed to each Configurer.
	Addresses inventory.AddressPolicy
	// Network and ServiceCIDR are the pod network mode and the Service
	// range handed to each Configurer.
	Network     string
	ServiceCIDR string
	// Platform (resolved: openshift or kubernetes), PlatformReason and
	// OpenShift are handed to each Configurer; on openshift a new rendered
	// worker MachineConfig or a changed ControllerConfig rechecks every
	// instance at once.
	Platform       platform.Platform
	PlatformReason string
	OpenShift      client.Reader
	// HybridClusterCIDR is handed to each Configurer (ovn-hybrid).
	HybridClusterCIDR string
	// Logs are handed to each Configurer (service log rotation).
	Logs *logrotate.Limits
	// Resolve resolves host names for the address conflict check, and
	// APIServerNames reads the names no node may have (each handed to every
	// Configurer).
	Resolve        inventory.Resolver
	APIServerNames func(ctx context.Context) ([]string, error)
	// MaxAnswer, MinTransferRate and SlowTransferGrace are handed to each
	// Configurer (configure.Configurer has their meaning).
	MaxAnswer         int
	MinTransferRate   int
	SlowTransferGrace time.Duration
	// ContainerRuntime is the mode a new instance without one gets
	// (--container-runtime; "" is Managed): runtime.go.
	ContainerRuntime winnodev1.ContainerRuntime
	// Namespace is the operator's namespace: on Kubernetes the
	// windows-registries ConfigMap, its credentials and TrustedCAConfigMap
	// are read there and watched. Proxy is the operator's own proxy
	// environment. All three are handed to each Configurer.
	Namespace          string
	TrustedCAConfigMap string
	Proxy              plan.ProxyFacts
	// SkipPreflight (--skip-preflight) and MinFreeDiskGiB
	// (--min-free-disk-gib): the pre-flight checks skipped for every
	// instance, and the disk check's limit (configure.Configurer).
	SkipPreflight  []string
	MinFreeDiskGiB int
	// Tune adjusts each Configurer (timeouts, test hooks).
	Tune func(*configure.Configurer)
	// Workloads, when set, is how an instance with spec.cluster (a Cluster
	// API Machine's) joins that Cluster's workload cluster: workload.go.
	Workloads Workloads
	// Metrics, when set, gives windows_exporter its certificates: each
	// host of this cluster runs windows_exporter (configure.Configurer).
	Metrics configure.MetricsCertificates

	rollout *configure.Rollout
	// passes are the configuration passes running now, which a deletion
	// stops (deconfigure.go).
	passes passes
	// reads reads each pass's instance from the cache unless the cache
	// may be behind (fresh.go); retries counts failed passes (retry.go).
	reads   *freshReads
	retries *retries
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("winnode-instance")
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	r.rollout = &configure.Rollout{Reader: r.Reader, MaxUnavailable: r.MaxUnavailable}
	r.reads = newFreshReads(r.Client, r.Reader)
	r.retries = newRetries(time.Second, retryMax(r.RetryMax))
	if err := IndexPeers(context.Background(), mgr); err != nil {
		return fmt.Errorf("indexing WindowsInstances by endpoint, host key and node name: %w", err)
	}
	workers, why := r.workers()
	mgr.GetLogger().WithName("windowsinstance").Info("hosts configured at once", "configurations", workers, "why", why)
	// Retries are the reconciler's own (retry.go): a pass returns no
	// error to controller-runtime, whose rate limiter is then unused.
	b := ctrl.NewControllerManagedBy(mgr).
		Named("windowsinstance").
		// Not For(): its handler queues the first list last (retry.go).
		Watches(&winnodev1.WindowsInstance{}, &enqueueByState{}, builder.WithPredicates(instanceChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers})
	// A Node that stops (or starts again) being Ready gets its instance
	// checked at once rather than at the next periodic check.
	b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.instanceOfNode), builder.WithPredicates(nodeReadinessChanged{}))
	// An instance leaving Upgrading or Failed frees a place in the rollout:
	// upgrades waiting for one look again at once (upgrade.go).
	b = b.Watches(&winnodev1.WindowsInstance{}, handler.EnqueueRequestsFromMapFunc(r.waitingUpgrades), builder.WithPredicates(leftUnavailable{}))
	if r.KeySecret.Name != "" {
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.allInstances),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetNamespace() == r.KeySecret.Namespace && o.GetName() == r.KeySecret.Name
			})))
	}
	if r.Platform == platform.OpenShift {
		b = r.watchOpenShift(b)
		b = r.watchRuntimeOpenShift(b)
		b = r.watchServiceCACertificate(b)
	} else if r.Namespace != "" {
		b = r.watchRuntimeKubernetes(b)
	}
	ctl, err := b.Build(r)
	if err != nil {
		return err
	}
	r.watchWorkloadNodes(ctl)
	return r.setupDeconfigure(mgr)
}

// workers is how many instances are configured at once, and why
// (concurrency.go).
func (r *Reconciler) workers() (int, string) {
	return ConfigurationsAtOnce(r.machine(), r.MaxConcurrentReconciles)
}

// machine is r.Machine, or the operator's own.
func (r *Reconciler) machine() Machine {
	if r.Machine.CPUs == 0 {
		return ThisMachine()
	}
	return r.Machine
}

// watchOpenShift rechecks every instance when the cluster facts OpenShift
// renders change: a rendered worker MachineConfig appears or changes, or
// ControllerConfig machine-config-controller's spec changes (a new kubelet
// CA). Only metadata is watched; the objects are read when configuring.
func (r *Reconciler) watchOpenShift(b *builder.Builder) *builder.Builder {
	meta := func(kind string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: kind})
		return m
	}
	named := func(match func(name string) bool) predicate.Predicate {
		return predicate.NewPredicateFuncs(func(o client.Object) bool { return match(o.GetName()) })
	}
	b = b.Watches(meta("MachineConfig"), handler.EnqueueRequestsFromMapFunc(r.allInstances),
		builder.OnlyMetadata, builder.WithPredicates(predicate.GenerationChangedPredicate{},
			named(func(n string) bool { return strings.HasPrefix(n, openshift.RenderedWorkerPrefix) })))
	return b.Watches(meta("ControllerConfig"), handler.EnqueueRequestsFromMapFunc(r.allInstances),
		builder.OnlyMetadata, builder.WithPredicates(predicate.GenerationChangedPredicate{},
			named(func(n string) bool { return n == openshift.ControllerConfigName })))
}

// watchServiceCACertificate rechecks every instance when the service CA
// writes windows_exporter's certificate (OpenShift, metricstls.ServiceCA):
// its first one, which configurations wait for, or a new one after the
// service CA rotated, which then reaches every host at once.
func (r *Reconciler) watchServiceCACertificate(b *builder.Builder) *builder.Builder {
	return b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.allInstances),
		builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == r.Namespace && o.GetName() == metricstls.ServiceCASecretName
		})))
}

// allInstances enqueues every WindowsInstance (the key changed).
func (r *Reconciler) allInstances(ctx context.Context, _ client.Object) []reconcile.Request {
	var list winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // read only: no copy of the fleet
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&i)})
	}
	return reqs
}

// instanceOfNode enqueues the instance whose host registered the Node of
// the operator's own cluster (the instances of workload clusters are woken
// by their cluster's Nodes: workload.go).
func (r *Reconciler) instanceOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	// The instances of that node name (index.go), not the whole fleet.
	named, err := peers(ctx, r.Client, []string{identity.NodeNameKey(winnodev1.ClusterRef{}, o.GetName())})
	if err != nil {
		return nil
	}
	for _, i := range named {
		if i.Spec.Cluster.IsZero() && i.Status.NodeName != "" && i.Status.NodeName == o.GetName() {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(&i)}}
		}
	}
	return nil
}

// nodeReadinessChanged lets through a Node's Ready condition changing and
// its deletion; heartbeats and new Nodes (awaited by polling) are ignored.
type nodeReadinessChanged struct{ predicate.Funcs }

func (nodeReadinessChanged) Create(event.CreateEvent) bool   { return false }
func (nodeReadinessChanged) Delete(event.DeleteEvent) bool   { return true }
func (nodeReadinessChanged) Generic(event.GenericEvent) bool { return false }
func (nodeReadinessChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	return ok1 && ok2 && configure.NodeReady(o) != configure.NodeReady(n)
}

// instanceChanged lets through what needs work: new and deleted instances,
// spec changes, the start of a deletion, and an administrator clearing a
// pinned host key. The reconciler's own status writes do not requeue it.
type instanceChanged struct{ predicate.Funcs }

func (instanceChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*winnodev1.WindowsInstance)
	n, ok2 := e.ObjectNew.(*winnodev1.WindowsInstance)
	if !ok1 || !ok2 {
		return true
	}
	switch {
	case o.Generation != n.Generation:
		return !runtimeModeSet(o, n)
	case (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil):
		return true
	case o.Status.HostKey != "" && n.Status.HostKey == "":
		return true
	case n.Status.Phase == "":
		return true
	}
	return false
}

// runtimeModeSet reports whether the only change of the spec is
// spec.containerRuntime given its mode: a pass sets it on its first pass
// (runtime.go) and goes on with it, so the update is no news. Passed
// through, it queued a second pass at once at the priority of events,
// ahead of every instance not tried yet (retry.go).
func runtimeModeSet(o, n *winnodev1.WindowsInstance) bool {
	if o.Spec.ContainerRuntime != "" || n.Spec.ContainerRuntime == "" {
		return false
	}
	spec := o.Spec
	spec.ContainerRuntime = n.Spec.ContainerRuntime
	return equality.Semantic.DeepEqual(spec, n.Spec)
}

func (instanceChanged) Create(event.CreateEvent) bool   { return true }
func (instanceChanged) Delete(event.DeleteEvent) bool   { return true }
func (instanceChanged) Generic(event.GenericEvent) bool { return true }

// Reconcile configures or checks one instance (pass), and decides when it
// is reconciled again (retry.go): a failed pass is logged once, here, and
// retried with backoff, never returned to controller-runtime.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.pass(ctx, req)
	if err == nil {
		r.retries.succeeded(req.Name)
		return nextPass(false, res.RequeueAfter, 0), nil
	}
	retryIn, failures := r.retries.failed(req.Name)
	reason := ""
	if se := (*configure.StepError)(nil); errors.As(err, &se) {
		reason = se.Reason
	}
	logr.FromContextOrDiscard(ctx).Info("configuration pass failed; retrying", "instance", req.Name, "reason", reason,
		"failures", failures, "retryIn", retryIn.Round(time.Millisecond).String(), "error", configure.ErrorMessage(err))
	return nextPass(true, 0, retryIn), nil
}

// pass is one pass over an instance: read it (fresh.go), then configure
// or check it. An instance being deleted is the deconfiguration
// controller's (deconfigure.go), whose workers are their own: a deletion
// never waits behind configurations.
func (r *Reconciler) pass(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	inst := &winnodev1.WindowsInstance{}
	if err := r.reads.get(ctx, req.NamespacedName, inst); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if inst.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	// The pass's writes update inst's resourceVersion: the next pass
	// reads the cache once it holds that version.
	defer r.reads.saw(inst)
	ctx, done := r.passes.begin(ctx, inst.Name)
	defer done()

	c, keyErr := r.configurer(ctx, inst, log)
	if err := r.inWorkloadCluster(ctx, inst, c); err != nil {
		var we *workload.Error
		if !errors.As(err, &we) {
			return ctrl.Result{}, err
		}
		return r.workloadUnusable(ctx, inst, we)
	}
	workloadReachable(inst)
	if !controllerutil.ContainsFinalizer(inst, winnodev1.Finalizer) {
		patch := client.MergeFrom(inst.DeepCopy())
		controllerutil.AddFinalizer(inst, winnodev1.Finalizer)
		if err := r.Client.Patch(ctx, inst, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer %s to WindowsInstance %s: %w", winnodev1.Finalizer, inst.Name, err)
		}
	}
	if _, err := r.setContainerRuntime(ctx, inst); err != nil {
		return ctrl.Result{}, err
	}
	if keyErr != nil {
		return r.noKey(ctx, inst, keyErr)
	}
	res, err := c.Configure(ctx, inst)
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
}

// configurer builds the Configurer for one reconcile, with the current key.
func (r *Reconciler) configurer(ctx context.Context, inst *winnodev1.WindowsInstance, log logr.Logger) (*configure.Configurer, error) {
	c := &configure.Configurer{
		Kube: r.Kube,
		// The CSR approver's watch keeps the manager's cache of CSRs.
		CSRs:       r.Client,
		PayloadDir: r.PayloadDir,
		Payload:    r.Payload,
		Version:    r.Version,
		Rollout:    r.rollout,

		JoinCredentials:    r.JoinCredentials,
		JoinNamespace:      r.JoinNamespace,
		Detector:           r.Detector,
		Addresses:          r.Addresses,
		Network:            r.Network,
		ServiceCIDR:        r.ServiceCIDR,
		Platform:           r.Platform,
		PlatformReason:     r.PlatformReason,
		OpenShift:          r.OpenShift,
		HybridClusterCIDR:  r.HybridClusterCIDR,
		Logs:               r.Logs,
		ContainerRuntime:   r.defaultRuntime(),
		ConfigNamespace:    r.Namespace,
		ConfigKube:         r.Kube, // stays the operator's cluster's in a workload cluster (workload.go)
		TrustedCAConfigMap: r.TrustedCAConfigMap,
		Proxy:              r.Proxy,
		SkipPreflight:      r.SkipPreflight,
		MinFreeDiskGiB:     r.MinFreeDiskGiB,
		Metrics:            r.Metrics,
		Persist: func(ctx context.Context, inst *winnodev1.WindowsInstance) error {
			return r.Client.Status().Update(ctx, inst)
		},
		Reload: func(ctx context.Context, inst *winnodev1.WindowsInstance) (*winnodev1.WindowsInstance, error) {
			stored := &winnodev1.WindowsInstance{}
			return stored, r.Reader.Get(ctx, client.ObjectKeyFromObject(inst), stored)
		},
		Event: func(inst *winnodev1.WindowsInstance, eventType, reason, message string) {
			r.Recorder.Eventf(inst, nil, eventType, reason, eventAction(inst), "%s", message)
		},
		Evidence: func(inst *winnodev1.WindowsInstance, eventType, reason, message string) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := report.Event(ctx, r.Client, inst, eventType, reason, eventAction(inst), message); err != nil {
				log.Error(err, "writing an event", "reason", reason)
			}
		},
		Uploaded:   r.Uploaded,
		SSHFailed:  r.SSHFailed,
		Configured: r.Configured,
		Log:        log,
		// The conflict checks (internal/identity) read only the instances
		// filed under their keys in the cache's index (index.go), uncopied.
		Peers: func(ctx context.Context, keys []string) ([]winnodev1.WindowsInstance, error) {
			return peers(ctx, r.Client, keys)
		},
		Resolve:           r.Resolve,
		APIServerNames:    r.APIServerNames,
		MaxAnswer:         r.MaxAnswer,
		MinTransferRate:   r.MinTransferRate,
		SlowTransferGrace: r.SlowTransferGrace,
	}
	c.Persisted(inst)
	if r.Tune != nil {
		r.Tune(c)
	}
	var err error
	if r.Signer == nil {
		err = fmt.Errorf("no SSH key source configured")
	} else {
		c.Signer, err = r.Signer(ctx)
	}
	return c, err
}

// noKey records that nothing can be done without a usable private key, and
// waits for the key Secret to change (or checks again in a minute).
func (r *Reconciler) noKey(ctx context.Context, inst *winnodev1.WindowsInstance, keyErr error) (ctrl.Result, error) {
	msg := fmt.Sprintf("no usable SSH private key: %v (Secret cloud-private-key, key private-key.pem: RSA of at least 2048 bits or ed25519)", keyErr)
	if meta.IsStatusConditionFalse(inst.Status.Conditions, winnodev1.ConditionReachable) && inst.Status.LastError == msg {
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	configure.SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonNoPrivateKey, msg)
	inst.Status.LastError = msg
	if inst.Status.Phase == "" || inst.Status.Phase == winnodev1.PhasePending {
		inst.Status.Phase = winnodev1.PhasePending
	}
	r.Recorder.Eventf(inst, nil, corev1.EventTypeWarning, winnodev1.ReasonNoPrivateKey, "Connect", "%s", msg)
	if err := r.Client.Status().Update(ctx, inst); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: time.Minute}, nil
}

// retryMax is the cap of the backoff between retries (RetryMax, default 2
// minutes).
func retryMax(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return 2 * time.Minute
}

// eventAction is the events.k8s.io "action" of an instance's event: what
// the reconciler was doing.
func eventAction(inst *winnodev1.WindowsInstance) string {
	if inst.DeletionTimestamp != nil || inst.Status.Phase == winnodev1.PhaseDeconfiguring {
		return "Deconfigure"
	}
	return "Configure"
}
