package capibootstrap

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/workload"
)

// Workloads gives the workload cluster of a Cluster, or why it cannot be
// used (internal/workload.Clusters).
type Workloads interface {
	Get(ctx context.Context, ref winnodev1.ClusterRef) (*workload.Cluster, error)
}

// ActionConnect is the action of the events about a config's workload
// cluster.
const ActionConnect = "Connect"

// workloadCluster sets condition WorkloadClusterReachable: whether the
// operator can act in the workload cluster of the config's Cluster, and if
// not, why (a Warning event when the cause changes). It returns the
// cluster, nil when it cannot be used. Errors other than a cluster that
// cannot be used are returned.
func (r *Reconciler) workloadCluster(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, cluster *clusterv1.Cluster) (*workload.Cluster, error) {
	ref := winnodev1.ClusterRef{Namespace: cluster.Namespace, Name: cluster.Name}
	wc, err := r.Workloads.Get(ctx, ref)
	var we *workload.Error
	if err != nil && !errors.As(err, &we) {
		return nil, err
	}
	c := metav1.Condition{Type: bootstrapv1.ConditionWorkloadClusterReachable, ObservedGeneration: cfg.Generation}
	if we != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, we.Reason, we.Error()
	} else {
		c.Status, c.Reason = metav1.ConditionTrue, workload.ReasonReachable
		c.Message = fmt.Sprintf("acting in the workload cluster of Cluster %s as ServiceAccount %s/%s", ref, wc.Namespace, workload.ServiceAccount)
	}
	old := meta.FindStatusCondition(cfg.Status.Conditions, c.Type)
	if (old == nil || old.Reason != c.Reason || old.Message != c.Message) && we != nil {
		r.Recorder.Eventf(cfg, nil, corev1.EventTypeWarning, we.Reason, ActionConnect, "%s", c.Message)
	}
	meta.SetStatusCondition(&cfg.Status.Conditions, c)
	return wc, nil
}
