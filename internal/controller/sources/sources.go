// Package sources is the operator's ConfigMap source: the entries of the
// windows-instances ConfigMap in the operator namespace become
// WindowsInstances, one per host (Reconciler; the format and its parser are
// in internal/inventory).
package sources

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/report"
	"github.com/winnode/winnode/internal/inventory"
)

// Event reasons (events.k8s.io/v1) on the windows-instances ConfigMap.
const (
	// EventReasonInvalidEntry: one per bad entry.
	EventReasonInvalidEntry = "InvalidEntry"
	// EventReasonInstanceCreated and EventReasonInstanceDeleted: an
	// instance created or deleted for an entry.
	EventReasonInstanceCreated = "InstanceCreated"
	EventReasonInstanceDeleted = "InstanceDeleted"
)

// Reconciler keeps one WindowsInstance per valid entry of the
// windows-instances ConfigMap (inventory.InstancesConfigMap; its format and
// parser are in internal/inventory):
//
//   - a new entry → a WindowsInstance named inventory.InstanceName(address),
//     labelled with its source, with the deconfigure finalizer already set;
//   - a changed username or port → the instance's spec updated;
//   - an entry removed (or the whole ConfigMap deleted) → the instance
//     deleted; its finalizer makes the instance reconciler deconfigure the
//     host first;
//   - a bad entry → one Warning event on the ConfigMap naming the key and the
//     reason; the other entries go on. A bad entry whose key still names the
//     host of an existing instance (a typo in the username, say) keeps that
//     instance as it is: a typo must not tear down a working node.
//
// Why labels and not an owner reference: a WindowsInstance is cluster-scoped
// and the ConfigMap namespaced, and a cluster-scoped object cannot have a
// namespaced owner (the garbage collector treats such a reference as
// unresolvable, reports OwnerRefInvalidNamespace and never collects the
// object). So the instance carries the labels
// winnode.io/source-{kind,namespace,name}, and this reconciler deletes by
// label — which also goes through the finalizer, as a deletion must.
type Reconciler struct {
	Client    client.Client
	Namespace string
	Recorder  events.EventRecorder
	// APIReader reads past the cache before an instance is created
	// (managedElsewhere). SetupWithManager sets the manager's when nil.
	APIReader client.Reader

	// warned remembers which bad entries were already reported, so a
	// reconcile that changes nothing warns nothing: ConfigMap UID →
	// key → value.
	mu     sync.Mutex
	warned map[types.UID]map[string]string
}

// +kubebuilder:rbac:groups=winnode.io,resources=windowsinstances,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=configmaps,verbs=get;list;watch

// sourceLabels select the instances of this reconciler's ConfigMap.
func (r *Reconciler) sourceLabels() client.MatchingLabels {
	return client.MatchingLabels{
		winnodev1.LabelSourceKind:      string(winnodev1.SourceConfigMap),
		winnodev1.LabelSourceNamespace: r.Namespace,
		winnodev1.LabelSourceName:      inventory.InstancesConfigMap,
	}
}

// Reconcile brings the WindowsInstances of the ConfigMap in line with its entries.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)

	var cm corev1.ConfigMap
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: inventory.InstancesConfigMap}, &cm)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	var entries []inventory.Entry
	var bad []inventory.EntryError
	if exists {
		entries, bad = inventory.ParseInstances(cm.Data)
		r.warn(ctx, &cm, bad)
	} else {
		r.forget()
	}

	var owned winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &owned, r.sourceLabels()); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the WindowsInstances of ConfigMap %s/%s: %w", r.Namespace, inventory.InstancesConfigMap, err)
	}

	// Addresses still named by some key, valid or not.
	listed := map[string]bool{}
	for key := range cm.Data {
		if addr, err := inventory.NormalizeAddress(key); err == nil {
			listed[addr] = true
		}
	}
	for i := range owned.Items {
		wi := &owned.Items[i]
		addr, _ := inventory.NormalizeAddress(wi.Spec.Address)
		if listed[addr] || !wi.DeletionTimestamp.IsZero() {
			continue
		}
		log.Info("entry removed; deleting its WindowsInstance", "instance", wi.Name, "address", wi.Spec.Address)
		if err := r.Client.Delete(ctx, wi); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("deleting WindowsInstance %s (entry %q removed): %w", wi.Name, wi.Spec.Source.Key, err)
		}
		if exists {
			r.Recorder.Eventf(&cm, wi, corev1.EventTypeNormal, EventReasonInstanceDeleted, report.ActionDelete,
				"entry %q removed: WindowsInstance %s is being deconfigured and deleted", wi.Spec.Source.Key, wi.Name)
		}
	}
	if !exists {
		return reconcile.Result{}, nil
	}

	var all winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &all); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing WindowsInstances: %w", err)
	}
	byName := map[string]*winnodev1.WindowsInstance{}
	byAddress := map[string]*winnodev1.WindowsInstance{}
	for i := range all.Items {
		wi := &all.Items[i]
		byName[wi.Name] = wi
		if addr, err := inventory.NormalizeAddress(wi.Spec.Address); err == nil {
			byAddress[addr] = wi
		}
	}
	for _, e := range entries {
		if err := r.ensure(ctx, &cm, e, byName, byAddress); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// ensure creates or updates the instance of one valid entry.
func (r *Reconciler) ensure(ctx context.Context, cm *corev1.ConfigMap, e inventory.Entry, byName, byAddress map[string]*winnodev1.WindowsInstance) error {
	name := inventory.InstanceName(e.Address)
	source := winnodev1.SourceRef{Kind: winnodev1.SourceConfigMap, Namespace: r.Namespace, Name: inventory.InstancesConfigMap, Key: e.Key}

	if other, ok := byAddress[e.Address]; ok && other.Name != name {
		r.warnManaged(ctx, cm, e, other)
		return nil
	}
	wi, exists := byName[name]
	if !exists {
		other, err := r.managedElsewhere(ctx, e.Address, name)
		if err != nil {
			return err
		}
		if other != nil {
			r.warnManaged(ctx, cm, e, other)
			return nil
		}
		wi = &winnodev1.WindowsInstance{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					winnodev1.LabelSourceKind:      string(winnodev1.SourceConfigMap),
					winnodev1.LabelSourceNamespace: r.Namespace,
					winnodev1.LabelSourceName:      inventory.InstancesConfigMap,
				},
				// Set at creation, so no deletion can ever skip deconfiguration.
				Finalizers: []string{winnodev1.Finalizer},
			},
			Spec: winnodev1.WindowsInstanceSpec{Address: e.Address, Username: e.Username, Port: e.Port, HostKeyFingerprint: e.HostKeyFingerprint, Source: source,
				ContainerRuntime: e.ContainerRuntime},
		}
		if err := r.Client.Create(ctx, wi); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return err // the cache was behind; retry with it refreshed
			}
			return fmt.Errorf("creating WindowsInstance %s for entry %q: %w", name, e.Key, err)
		}
		ctrl.LoggerFrom(ctx).Info("created WindowsInstance", "instance", name, "address", e.Address)
		r.Recorder.Eventf(cm, wi, corev1.EventTypeNormal, EventReasonInstanceCreated, report.ActionCreate,
			"entry %q: created WindowsInstance %s", e.Key, name)
		return nil
	}
	if wi.Labels[winnodev1.LabelSourceKind] != string(winnodev1.SourceConfigMap) || wi.Labels[winnodev1.LabelSourceNamespace] != r.Namespace {
		r.warn(ctx, cm, []inventory.EntryError{{Key: e.Key, Reason: fmt.Sprintf("WindowsInstance %s exists and belongs to another source; delete it to manage the host from this ConfigMap", name)}})
		return nil
	}
	if !wi.DeletionTimestamp.IsZero() {
		// Being deconfigured (entry removed and added back): once it is gone,
		// the deletion event brings us back here to create it afresh.
		return nil
	}
	// An entry without containerRuntime leaves the instance's mode as it
	// is (the operator's default, set once: instance runtime.go).
	runtime := cmp.Or(e.ContainerRuntime, wi.Spec.ContainerRuntime)
	if wi.Spec.Username == e.Username && wi.Spec.Port == e.Port && wi.Spec.HostKeyFingerprint == e.HostKeyFingerprint && wi.Spec.Source == source &&
		wi.Spec.ContainerRuntime == runtime {
		return nil
	}
	patch := client.MergeFrom(wi.DeepCopy())
	wi.Spec.Username, wi.Spec.Port, wi.Spec.Source = e.Username, e.Port, source
	wi.Spec.HostKeyFingerprint, wi.Spec.ContainerRuntime = e.HostKeyFingerprint, runtime
	controllerutil.AddFinalizer(wi, winnodev1.Finalizer)
	if err := r.Client.Patch(ctx, wi, patch); err != nil {
		return fmt.Errorf("updating WindowsInstance %s for entry %q: %w", name, e.Key, err)
	}
	return nil
}

// managedElsewhere asks the API server, not the cache, for an instance other
// than name that manages address. The cache can lag behind an instance
// created a moment ago (an administrator's manual instance for the host,
// just before its ConfigMap entry), and creating a second instance for the
// host would have two instances configure it.
func (r *Reconciler) managedElsewhere(ctx context.Context, address, name string) (*winnodev1.WindowsInstance, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	var all winnodev1.WindowsInstanceList
	if err := r.APIReader.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("listing WindowsInstances before creating %s for host %s: %w", name, address, err)
	}
	for i := range all.Items {
		wi := &all.Items[i]
		if addr, err := inventory.NormalizeAddress(wi.Spec.Address); err == nil && addr == address && wi.Name != name {
			return wi, nil
		}
	}
	return nil, nil
}

// warnManaged reports an entry whose host another instance manages.
func (r *Reconciler) warnManaged(ctx context.Context, cm *corev1.ConfigMap, e inventory.Entry, other *winnodev1.WindowsInstance) {
	r.warn(ctx, cm, []inventory.EntryError{{Key: e.Key, Reason: fmt.Sprintf(
		"host %s is already managed by WindowsInstance %s (source %s); delete that instance to manage it from this ConfigMap",
		e.Address, other.Name, other.Spec.Source.Kind)}})
}

// warn sends one Warning event per bad entry not yet reported with the same
// value and reason (an edit of another entry does not repeat it).
func (r *Reconciler) warn(ctx context.Context, cm *corev1.ConfigMap, bad []inventory.EntryError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warned == nil || r.warned[cm.UID] == nil {
		// A new ConfigMap (or the first look at it): forget the others.
		r.warned = map[types.UID]map[string]string{cm.UID: {}}
	}
	seen := r.warned[cm.UID]
	for _, b := range bad {
		fingerprint := cm.Data[b.Key] + "\x00" + b.Reason
		if prev, ok := seen[b.Key]; ok && prev == fingerprint {
			continue
		}
		if err := report.Event(ctx, r.Client, cm, corev1.EventTypeWarning, EventReasonInvalidEntry, report.ActionParse, b.Error()); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "reporting a bad entry", "key", b.Key, "reason", b.Reason)
			continue // try again next reconcile
		}
		seen[b.Key] = fingerprint
	}
}

// forget drops what was reported (the ConfigMap is gone).
func (r *Reconciler) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warned = nil
}

// SetupWithManager watches the ConfigMap and the instances (an instance
// deleted by hand while listed is created again; a finished deletion lets a
// re-added entry be created).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	key := types.NamespacedName{Namespace: r.Namespace, Name: inventory.InstancesConfigMap}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	isOurs := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetName() == inventory.InstancesConfigMap
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("sources").
		Watches(&corev1.ConfigMap{}, one, builder.WithPredicates(isOurs)).
		// Every instance, not only ours: an instance of another source that
		// blocked an entry (same host) may be gone now.
		Watches(&winnodev1.WindowsInstance{}, one, builder.WithPredicates(instanceLifecycle{})).
		Complete(r)
}

// instanceLifecycle passes creations, deletions and spec changes of
// instances, not their frequent status updates.
type instanceLifecycle struct{ predicate.Funcs }

func (instanceLifecycle) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
}
