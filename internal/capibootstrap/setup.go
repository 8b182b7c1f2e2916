package capibootstrap

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	"github.com/winnode/winnode/internal/controller/optional"
	"github.com/winnode/winnode/internal/sshkey"
)

// What the bootstrap provider needs (config/rbac/cluster_role.yaml grants
// it, with the reasons). Secrets: create only, in any namespace, since
// Machines live in any namespace; never read or changed (secret.go).
// WinnodeConfigs: patch, to add and remove TokenFinalizer (release.go).
// +kubebuilder:rbac:groups=bootstrap.winnode.io,resources=winnodeconfigs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=bootstrap.winnode.io,resources=winnodeconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=bootstrap.winnode.io,resources=winnodeconfigs/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// Required are the APIs the provider needs: Cluster API's Machines and
// Clusters at the contract's version, and winnode's WinnodeConfigs.
var Required = []schema.GroupVersionResource{
	clusterv1.GroupVersion.WithResource("machines"),
	clusterv1.GroupVersion.WithResource("clusters"),
	bootstrapv1.GroupVersion.WithResource("winnodeconfigs"),
}

// TurnOn says how to turn the provider (and the Cluster API Machine source)
// on where it is off.
const TurnOn = "restart the operator after installing Cluster API and winnode's bootstrap.winnode.io CRDs to turn it on"

// Part is the bootstrap provider as an optional part of the operator
// (internal/controller/optional): on where the cluster serves Cluster API
// (cluster.x-k8s.io/v1beta2) and the WinnodeConfig CRD, so that the
// operator runs on clusters without Cluster API. namespace is the operator
// namespace, whose key Secret the manager's cache covers. WinnodeConfigs
// and Clusters live in any namespace: the manager's cache keeps them all.
func Part(namespace string, workloads Workloads, pull Pull) optional.Part {
	return optional.Part{
		Name:        "Cluster API bootstrap provider",
		Requires:    Required,
		TurnOn:      TurnOn,
		AddToScheme: []func(*runtime.Scheme) error{clusterv1.AddToScheme, bootstrapv1.AddToScheme, winnodev1.AddToScheme},
		Cache: map[client.Object]cache.ByObject{
			&bootstrapv1.WinnodeConfig{}: {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
			&clusterv1.Cluster{}:         {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
		},
		Setup: func(mgr ctrl.Manager) error {
			r := &Reconciler{
				Client: mgr.GetClient(), Cache: mgr.GetClient(), Reader: mgr.GetAPIReader(), KeyReader: mgr.GetClient(),
				Namespace: namespace, Recorder: mgr.GetEventRecorder("winnode-capi-bootstrap"), Workloads: workloads, Pull: pull,
			}
			return r.setupWithManager(mgr)
		},
	}
}

// setupWithManager watches WinnodeConfigs, Clusters (a created or unpaused
// Cluster wakes its namespace's configs) and the operator's key Secret (a
// config waiting for the key goes on when it appears).
func (r *Reconciler) setupWithManager(mgr ctrl.Manager) error {
	inNamespace := func(ctx context.Context, ns string) []reconcile.Request {
		var list bootstrapv1.WinnodeConfigList
		var opts []client.ListOption
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := r.Cache.List(ctx, &list, opts...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing WinnodeConfigs to wake")
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, c := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
		return reqs
	}
	key := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetName() == sshkey.PrivateKeySecret
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("capi-bootstrap").
		For(&bootstrapv1.WinnodeConfig{}).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, c client.Object) []reconcile.Request {
				return inNamespace(ctx, c.GetNamespace())
			})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ client.Object) []reconcile.Request { return inNamespace(ctx, "") }),
			builder.WithPredicates(key)).
		Complete(r)
}
