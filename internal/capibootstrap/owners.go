package capibootstrap

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
)

// blocked is why a config cannot go on yet: the Ready condition's reason and
// message.
type blocked struct{ reason, message string }

// owningMachineName returns the name of the Cluster API Machine among the
// config's owners (any version of group cluster.x-k8s.io), or "".
func owningMachineName(cfg *bootstrapv1.WinnodeConfig) string {
	for _, ref := range cfg.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == clusterv1.GroupVersion.Group && ref.Kind == "Machine" {
			return ref.Name
		}
	}
	return ""
}

// owners finds the config's Machine (read from the API server: the
// operator does not watch Machines) and the Machine's Cluster (from the
// cache). A missing one is a wait, as the contract's reconciliation
// workflow says: the Machine controller sets the owner reference, and a
// created Cluster wakes the config (setup.go).
func (r *Reconciler) owners(ctx context.Context, cfg *bootstrapv1.WinnodeConfig) (*clusterv1.Machine, *clusterv1.Cluster, *blocked, error) {
	name := owningMachineName(cfg)
	if name == "" {
		return nil, nil, &blocked{bootstrapv1.ReasonWaitingForMachine, "no Cluster API Machine owns this WinnodeConfig yet (ownerReferences)"}, nil
	}
	var m clusterv1.Machine
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: name}, &m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, &blocked{bootstrapv1.ReasonWaitingForMachine, fmt.Sprintf("the owning Machine %s does not exist", name)}, nil
		}
		return nil, nil, nil, fmt.Errorf("reading Machine %s/%s: %w", cfg.Namespace, name, err)
	}
	var c clusterv1.Cluster
	if err := r.Cache.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: m.Spec.ClusterName}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, &blocked{bootstrapv1.ReasonWaitingForCluster, fmt.Sprintf("Machine %s belongs to Cluster %q, which does not exist", name, m.Spec.ClusterName)}, nil
		}
		return nil, nil, nil, fmt.Errorf("reading Cluster %s/%s: %w", cfg.Namespace, m.Spec.ClusterName, err)
	}
	return &m, &c, nil, nil
}

// paused reports whether the contract's pause applies: the Cluster's
// spec.paused, or the annotation cluster.x-k8s.io/paused on the config.
func paused(c *clusterv1.Cluster, cfg *bootstrapv1.WinnodeConfig) (bool, string) {
	if ptr.Deref(c.Spec.Paused, false) {
		return true, fmt.Sprintf("Cluster %s is paused (spec.paused)", c.Name)
	}
	if _, ok := cfg.Annotations[clusterv1.PausedAnnotation]; ok {
		return true, fmt.Sprintf("the WinnodeConfig has the annotation %s", clusterv1.PausedAnnotation)
	}
	return false, ""
}
