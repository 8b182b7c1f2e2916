package workload

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/optional"
)

// Part turns c on as an optional part of the operator
// (internal/controller/optional), on where the cluster serves requires
// (Cluster API's and winnode's bootstrap APIs, as the parts that use c):
// c reads Clusters from the manager's cache (all namespaces) and kubeconfig
// Secrets from the API server, runs with the manager (its caches stop with
// it), and stops watching the workload cluster of a Cluster that is gone.
// The parts that use c are set up after it.
func Part(c *Clusters, requires []schema.GroupVersionResource, turnOn string) optional.Part {
	return optional.Part{
		Name:        "Cluster API workload clusters",
		Requires:    requires,
		TurnOn:      turnOn,
		AddToScheme: []func(*runtime.Scheme) error{clusterv1.AddToScheme},
		Cache: map[client.Object]cache.ByObject{
			&clusterv1.Cluster{}: {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
		},
		Setup: func(mgr ctrl.Manager) error {
			c.Clusters, c.Secrets, c.Log = mgr.GetClient(), mgr.GetAPIReader(), mgr.GetLogger().WithName("workload-clusters")
			if c.Scheme == nil {
				c.Scheme = mgr.GetScheme()
			}
			if err := mgr.Add(c); err != nil {
				return err
			}
			return ctrl.NewControllerManagedBy(mgr).
				Named("workload-clusters").
				For(&clusterv1.Cluster{}).
				Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
					err := mgr.GetClient().Get(ctx, req.NamespacedName, &clusterv1.Cluster{})
					if apierrors.IsNotFound(err) {
						c.Forget(winnodev1.ClusterRef{Namespace: req.Namespace, Name: req.Name})
						return reconcile.Result{}, nil
					}
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}))
		},
	}
}

// On reports whether c is set up (its part is on).
func (c *Clusters) On() bool { return c != nil && c.Clusters != nil }
