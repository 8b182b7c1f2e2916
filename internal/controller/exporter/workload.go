package exporter

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// PullNodes gives the Pull Machines joining a workload cluster, each as
// the instance the CSR approver sees (internal/capibootstrap.PullMachines):
// status.nodeName is the Node its host registers.
type PullNodes interface {
	Instances(ctx context.Context, cluster winnodev1.ClusterRef) ([]winnodev1.WindowsInstance, error)
}

// workloadResync is how often a workload cluster's Service and slices are
// put back even when no Node changed: the operator does not watch them
// there (its Role there has no list or watch of Services).
const workloadResync = 10 * time.Minute

// WorkloadReconciler keeps, in one Cluster API workload cluster, the
// Service windows-exporter (no selector) and its EndpointSlices listing
// the Ready Windows nodes winnode made there, Push (WindowsInstances with
// spec.cluster) and Pull (the Machines' configs), in winnode's namespace
// there, so that a scraper of that cluster finds them as it finds those
// of the operator's own cluster. Their windows_exporter serves with the
// kubelet's serving certificate, which that cluster's CA signed: no CA is
// kept or published here. It acts as winnode's ServiceAccount there, with
// what config/workload/access.yaml grants.
type WorkloadReconciler struct {
	Cluster winnodev1.ClusterRef
	// Instances reads WindowsInstances (the manager's cache).
	Instances client.Reader
	// Pull, when set, gives the Pull Machines' nodes.
	Pull PullNodes
	// Nodes reads the workload cluster's Nodes (its cache).
	Nodes client.Reader
	// Objects writes the Service and the slices (no cache: the operator
	// may not watch them there).
	Objects   client.Client
	Namespace string
}

// Reconcile brings the Service and the slices to what the nodes say.
func (r *WorkloadReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	keeper := &Reconciler{Client: r.Objects, Namespace: r.Namespace}
	svc, err := keeper.service(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("in the workload cluster of Cluster %s: %w", r.Cluster, err)
	}
	nodes, err := r.windowsNodes(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	eps, skipped := Endpoints(nodes)
	for _, s := range skipped {
		ctrl.LoggerFrom(ctx).Info("a Windows node is left out of the windows-exporter EndpointSlices", "node", s.Node, "reason", s.Reason)
	}
	set := ClusterSlices(r.Cluster)
	if err := keeper.applySlices(ctx, set, set.Desired(r.Namespace, ownerOf(svc), eps)); err != nil {
		return reconcile.Result{}, fmt.Errorf("in the workload cluster of Cluster %s: %w", r.Cluster, err)
	}
	return reconcile.Result{RequeueAfter: workloadResync}, nil
}

// windowsNodes are the workload cluster's Nodes of this Cluster's
// WindowsInstances and Pull Machines.
func (r *WorkloadReconciler) windowsNodes(ctx context.Context) ([]*corev1.Node, error) {
	var insts winnodev1.WindowsInstanceList
	if err := r.Instances.List(ctx, &insts); err != nil {
		return nil, err
	}
	all := insts.Items
	if r.Pull != nil {
		pull, err := r.Pull.Instances(ctx, r.Cluster)
		if err != nil {
			return nil, err
		}
		all = append(all, pull...)
	}
	var nodes []*corev1.Node
	for _, inst := range all {
		if inst.Status.NodeName == "" || inst.Spec.Cluster != r.Cluster {
			continue
		}
		n := &corev1.Node{}
		err := r.Nodes.Get(ctx, client.ObjectKey{Name: inst.Status.NodeName}, n)
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if err == nil {
			nodes = append(nodes, n)
		}
	}
	return nodes, nil
}

// WindowsNodeChanged passes Windows Nodes created or deleted, and those
// whose readiness or addresses changed: what the slices list (the
// workload clusters' Node sources, internal/controller).
type WindowsNodeChanged struct{}

func isWindowsNode(n *corev1.Node) bool {
	return n.Labels[corev1.LabelOSStable] == string(corev1.Windows)
}

func (WindowsNodeChanged) Create(e event.TypedCreateEvent[*corev1.Node]) bool {
	return isWindowsNode(e.Object)
}
func (WindowsNodeChanged) Delete(e event.TypedDeleteEvent[*corev1.Node]) bool {
	return isWindowsNode(e.Object)
}
func (WindowsNodeChanged) Generic(event.TypedGenericEvent[*corev1.Node]) bool { return false }
func (WindowsNodeChanged) Update(e event.TypedUpdateEvent[*corev1.Node]) bool {
	if !isWindowsNode(e.ObjectNew) {
		return false
	}
	return ready(e.ObjectOld) != ready(e.ObjectNew) || !slices.Equal(e.ObjectOld.Status.Addresses, e.ObjectNew.Status.Addresses)
}
