package capibootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/sshkey"
)

// What the bootstrap provider needs (config/rbac/cluster_role.yaml grants
// it, with the reasons). Secrets: create only, in any namespace, since
// Machines live in any namespace; never read or changed (secret.go).
// +kubebuilder:rbac:groups=bootstrap.winnode.io,resources=winnodeconfigs,verbs=get;list;watch
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

// Available reports whether the API server serves every required API, and
// if not, which one is missing (a sentence for the log).
func Available(d discovery.DiscoveryInterface) (bool, string, error) {
	return platform.Serves(d, Required...)
}

// Setup adds the bootstrap provider to mgr when the cluster serves Cluster
// API (cluster.x-k8s.io/v1beta2) and the WinnodeConfig CRD; otherwise it
// logs why not and adds nothing, so the operator runs on clusters without
// Cluster API. The check runs once: installing Cluster API later takes a
// restart of the operator. namespace is the operator namespace, whose key
// Secret the manager's cache must cover.
func Setup(mgr ctrl.Manager, namespace string) error {
	log := mgr.GetLogger().WithName("capi-bootstrap")
	ok, why, err := platform.ServesAt(mgr.GetConfig(), Required...)
	if err != nil {
		return err
	}
	if !ok {
		log.Info("Cluster API bootstrap provider off: " + why + "; restart the operator after installing Cluster API and winnode's bootstrap.winnode.io CRDs to turn it on")
		return nil
	}
	scheme := mgr.GetScheme()
	if err := clusterv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := bootstrapv1.AddToScheme(scheme); err != nil {
		return err
	}
	// The manager's cache may cover the operator namespace only
	// (cmd/winnode-operator); WinnodeConfigs and Clusters live anywhere.
	all, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: scheme, Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("building the Cluster API cache: %w", err)
	}
	if err := mgr.Add(all); err != nil {
		return err
	}
	r := &Reconciler{
		Client: mgr.GetClient(), Cache: all, Reader: mgr.GetAPIReader(), KeyReader: mgr.GetClient(),
		Namespace: namespace, Recorder: mgr.GetEventRecorder("winnode-capi-bootstrap"),
	}
	log.Info("Cluster API bootstrap provider on", "apis", fmt.Sprint(Required))
	return r.setupWithManager(mgr, all)
}

// setupWithManager watches WinnodeConfigs, Clusters (a created or unpaused
// Cluster wakes its namespace's configs) and the operator's key Secret (a
// config waiting for the key goes on when it appears).
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, all cache.Cache) error {
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
		WatchesRawSource(source.Kind(all, &bootstrapv1.WinnodeConfig{}, &handler.TypedEnqueueRequestForObject[*bootstrapv1.WinnodeConfig]{})).
		WatchesRawSource(source.Kind(all, &clusterv1.Cluster{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(ctx context.Context, c *clusterv1.Cluster) []reconcile.Request {
				return inNamespace(ctx, c.Namespace)
			}))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ client.Object) []reconcile.Request { return inNamespace(ctx, "") }),
			builder.WithPredicates(key)).
		Complete(r)
}
