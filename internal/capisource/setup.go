package capisource

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/controller/optional"
	"github.com/winnode/winnode/internal/machinesource"
)

// What the source needs (config/rbac/cluster_role.yaml grants it, with the
// reasons): Machines in every namespace, watched, and patched only for the
// pre-terminate hook annotation.
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch;patch

// Part is the source as an optional part of the operator
// (internal/controller/optional): on where the cluster serves Cluster API
// and winnode's bootstrap API (capibootstrap.Required), as the bootstrap
// provider is. Machines live in any namespace: the manager's cache keeps
// them all.
func Part(workloads Workloads) optional.Part {
	return optional.Part{
		Name:        "Cluster API Machine source",
		Requires:    capibootstrap.Required,
		TurnOn:      capibootstrap.TurnOn,
		AddToScheme: []func(*runtime.Scheme) error{clusterv1.AddToScheme, bootstrapv1.AddToScheme},
		Cache: map[client.Object]cache.ByObject{
			&clusterv1.Machine{}:         {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
			&bootstrapv1.WinnodeConfig{}: {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
		},
		Setup: func(mgr ctrl.Manager) error { return setup(mgr, workloads) },
	}
}

// setup watches Machines and WindowsInstances of Machines (a deleted
// instance lets its Machine's deletion go on).
func setup(mgr ctrl.Manager, workloads Workloads) error {
	recorder := mgr.GetEventRecorder("winnode-capi-source")
	r := &MachineReconciler{Client: mgr.GetClient(), Machines: mgr.GetClient(), Workloads: workloads,
		Instances: &machinesource.Instances{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Source: machinesource.SourceClusterAPI,
			// Pull Machines have no WindowsInstance; their addresses count too.
			HostsWithoutInstance: (&capibootstrap.PullMachines{Configs: mgr.GetClient(), Machines: mgr.GetAPIReader()}).Instances}}
	ofMachine := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := machinesource.MachineOf(o)
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("capi-machine-source").
		For(&clusterv1.Machine{}).
		Watches(&winnodev1.WindowsInstance{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				key, _ := machinesource.MachineOf(o)
				return []reconcile.Request{{NamespacedName: key}}
			}), builder.WithPredicates(ofMachine)).
		Complete(r)
}
