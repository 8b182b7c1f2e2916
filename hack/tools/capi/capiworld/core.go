package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util/index"
)

// Cluster API's defaults for the flags of its core manager (core/main.go)
// that these controllers take: the grace periods after which a workload
// cluster that stopped answering the ClusterCache's health probe is
// reported (RemoteConnectionProbe) and its Nodes' conditions are set to
// Unknown, and the ClusterCache's client rate limits.
const (
	remoteConnectionGracePeriod = 50 * time.Second
	remoteConditionsGracePeriod = 5 * time.Minute
	clusterCacheClientQPS       = 20
	clusterCacheClientBurst     = 30
)

// concurrency is each controller's number of workers: Cluster API's
// defaults are 50 to 100, for thousands of Machines; the test world has a
// handful.
func concurrency() controller.Options {
	return controller.Options{MaxConcurrentReconciles: 5}
}

// newScheme knows the built-in types, CustomResourceDefinitions (Cluster
// API reads its providers' contract labels from them) and Cluster API's
// v1beta2 types. The winsim providers' objects are unstructured.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// addCoreControllers wires Cluster API's core controllers as its manager
// does (core/main.go setupIndexes and setupReconcilers), leaving out what
// the test world does not use: ClusterClass and topology, MachinePool,
// ClusterResourceSet, MachineHealthCheck, ExtensionConfig and the
// Runtime SDK, the CRD migrator, webhooks. The ClusterCache is how the
// Cluster and Machine controllers reach the workload cluster (here the
// same API server, through the <cluster>-kubeconfig Secret): without it
// no Machine gets its nodeRef.
func addCoreControllers(ctx context.Context, mgr manager.Manager) error {
	// The field indexes the controllers list by (Machines by Node name
	// and provider ID, among others).
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("adding Cluster API's indexes: %w", err)
	}
	secretClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return fmt.Errorf("creating the secret caching client: %w", err)
	}
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretClient,
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions(controllerName, clusterCacheClientQPS, clusterCacheClientBurst),
	}, concurrency())
	if err != nil {
		return fmt.Errorf("adding the ClusterCache: %w", err)
	}
	c, reader := mgr.GetClient(), mgr.GetAPIReader()
	if err := (&cluster.Reconciler{
		Client: c, APIReader: reader, ClusterCache: clusterCache,
		RemoteConnectionGracePeriod: remoteConnectionGracePeriod,
	}).SetupWithManager(ctx, mgr, concurrency()); err != nil {
		return fmt.Errorf("adding the Cluster controller: %w", err)
	}
	if err := (&machine.Reconciler{
		Client: c, APIReader: reader, ClusterCache: clusterCache,
		RemoteConditionsGracePeriod: remoteConditionsGracePeriod,
	}).SetupWithManager(ctx, mgr, concurrency()); err != nil {
		return fmt.Errorf("adding the Machine controller: %w", err)
	}
	if err := (&machineset.Reconciler{
		Client: c, APIReader: reader, ClusterCache: clusterCache,
		PreflightChecks: sets.New(clusterv1.MachineSetPreflightCheckAll),
	}).SetupWithManager(ctx, mgr, concurrency()); err != nil {
		return fmt.Errorf("adding the MachineSet controller: %w", err)
	}
	if err := (&machinedeployment.Reconciler{Client: c, APIReader: reader}).SetupWithManager(ctx, mgr, concurrency()); err != nil {
		return fmt.Errorf("adding the MachineDeployment controller: %w", err)
	}
	return nil
}

// capiVersion is the version of sigs.k8s.io/cluster-api built in, from the
// binary's module information (Cluster API's own version package is set by
// its release build's linker flags, which this build does not use).
func capiVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "sigs.k8s.io/cluster-api" {
				return dep.Version
			}
		}
	}
	return "(unknown version)"
}
