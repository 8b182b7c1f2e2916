package capisource

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/machinesource"
	"github.com/winnode/winnode/internal/platform"
)

// What the source needs (config/rbac/cluster_role.yaml grants it, with the
// reasons): Machines in every namespace, watched, and patched only for the
// pre-terminate hook annotation.
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch;patch

// Setup adds the Cluster API source to mgr when the cluster serves Cluster
// API and winnode's bootstrap API (capibootstrap.Available); otherwise it
// adds nothing (capibootstrap.Setup logs why). The manager's cache may
// cover the operator namespace only, so the source keeps a cache of
// Machines in every namespace.
func Setup(mgr ctrl.Manager) error {
	ok, _, err := platform.ServesAt(mgr.GetConfig(), capibootstrap.Required...)
	if err != nil || !ok {
		return err
	}
	if err := clusterv1.AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	machines, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("building the cache of Cluster API Machines: %w", err)
	}
	if err := mgr.Add(machines); err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder("winnode-capi-source")
	r := &MachineReconciler{Client: mgr.GetClient(), Machines: machines,
		Instances: &machinesource.Instances{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder}}
	ofMachine := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[winnodev1.LabelSourceKind] == string(winnodev1.SourceMachine)
	})
	mgr.GetLogger().WithName("capi-source").Info("Cluster API Machine source on")
	return ctrl.NewControllerManagedBy(mgr).
		Named("capi-machine-source").
		WatchesRawSource(source.Kind(machines, &clusterv1.Machine{}, &handler.TypedEnqueueRequestForObject[*clusterv1.Machine]{})).
		Watches(&winnodev1.WindowsInstance{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				l := o.GetLabels()
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[winnodev1.LabelSourceNamespace], Name: l[winnodev1.LabelSourceName]}}}
			}), builder.WithPredicates(ofMachine)).
		Complete(r)
}
