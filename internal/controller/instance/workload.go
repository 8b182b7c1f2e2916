package instance

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/workload"
)

// Workloads gives the workload cluster of a Cluster API Cluster, or why it
// cannot be used (internal/workload.Clusters).
type Workloads interface {
	On() bool
	Get(ctx context.Context, ref winnodev1.ClusterRef) (*workload.Cluster, error)
	OnConnect(fn func(*workload.Cluster) error)
}

// workloadRecheck is how soon an instance whose workload cluster cannot be
// used is looked at again.
const workloadRecheck = 10 * time.Second

// inWorkloadCluster points c at the workload cluster of inst.Spec.Cluster:
// every request of the join (bootstrap token, cluster facts, Node lookup,
// drain, deletion) goes there, as winnode's ServiceAccount, with that
// cluster's own facts (API endpoint, Service range, DNS domain), never the
// operator's flags, which describe the operator's own cluster. An
// instance without spec.cluster is left as it is. The error is a
// *workload.Error when the cluster cannot be used.
func (r *Reconciler) inWorkloadCluster(ctx context.Context, inst *winnodev1.WindowsInstance, c *configure.Configurer) error {
	ref := inst.Spec.Cluster
	if ref.IsZero() {
		return nil
	}
	if r.Workloads == nil || !r.Workloads.On() {
		return &workload.Error{Cluster: ref, Reason: workload.ReasonClusterNotFound,
			Err: errors.New("this operator has no Cluster API parts on (Cluster API's CRDs are not installed): it cannot act in a workload cluster")}
	}
	wc, err := r.Workloads.Get(ctx, ref)
	if err != nil {
		return err
	}
	c.Kube, c.Detector, c.JoinNamespace = wc.Kube, wc.Detector, wc.Namespace
	// The CSR approver of that cluster watches its CSRs in wc.Cache.
	c.CSRs = wc.Client
	c.ServiceCIDR = wc.Facts.ServiceCIDR()
	c.Addresses = wc.Facts.AddressPolicy(r.Addresses.Allowed)
	c.APIServer = wc.Facts.APIServer
	if wc.APIServer != nil {
		c.APIServerNames = wc.APIServer.Names
	}
	c.Platform, c.PlatformReason, c.OpenShift = platform.Kubernetes, "a Cluster API workload cluster", nil
	// The metrics CA and the windows-exporter Service of the operator's
	// cluster are not the workload cluster's: its nodes' windows_exporter
	// serves with the kubelet's serving certificate, signed by the
	// workload cluster's CA, which its scrapers trust (docs/metrics.md).
	c.Metrics, c.KubeletServingMetrics = nil, true
	// Cluster API's kubeadm bootstrap provider's tokens: short-lived,
	// refreshed until the Node registers.
	c.TokenTTL, c.RefreshTokens = bootstrap.ClusterAPITokenTTL, true
	return nil
}

// workloadUnusable records on inst that its workload cluster cannot be used
// (condition WorkloadClusterReachable False, a Warning event when the
// cause changes) and looks again later; nothing is done with the host.
func (r *Reconciler) workloadUnusable(ctx context.Context, inst *winnodev1.WindowsInstance, we *workload.Error) (ctrl.Result, error) {
	old := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionWorkloadClusterReachable)
	msg := we.Error()
	if old != nil && old.Status == metav1.ConditionFalse && old.Reason == we.Reason && old.Message == msg {
		return ctrl.Result{RequeueAfter: workloadRecheck}, nil
	}
	configure.SetCondition(inst, winnodev1.ConditionWorkloadClusterReachable, metav1.ConditionFalse, we.Reason, msg)
	if inst.Status.Phase == "" {
		inst.Status.Phase = winnodev1.PhasePending
	}
	r.Recorder.Eventf(inst, nil, corev1.EventTypeWarning, we.Reason, "Connect", "%s", msg)
	if err := r.Client.Status().Update(ctx, inst); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: workloadRecheck}, nil
}

// workloadReachable sets condition WorkloadClusterReachable True on an
// instance with spec.cluster (persisted with the next status write).
func workloadReachable(inst *winnodev1.WindowsInstance) {
	if inst.Spec.Cluster.IsZero() {
		return
	}
	configure.SetCondition(inst, winnodev1.ConditionWorkloadClusterReachable, metav1.ConditionTrue, workload.ReasonReachable,
		fmt.Sprintf("acting in the workload cluster of Cluster %s as its ServiceAccount %s", inst.Spec.Cluster, workload.ServiceAccount))
}

// watchWorkloadNodes makes each workload cluster's Nodes wake the
// instances of that cluster, as the operator's own Nodes wake the others
// (Node readiness changes, deletions).
func (r *Reconciler) watchWorkloadNodes(ctl controller.Controller) {
	if r.Workloads == nil || !r.Workloads.On() {
		return
	}
	r.Workloads.OnConnect(func(wc *workload.Cluster) error {
		ref := wc.Ref
		toInstance := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, n *corev1.Node) []reconcile.Request {
			return r.instancesOfNode(ctx, ref, n.Name)
		})
		return ctl.Watch(source.Kind(wc.Cache, &corev1.Node{}, toInstance, typedNodeReadinessChanged{}))
	})
}

// instancesOfNode is the instance of cluster ref whose host registered
// Node name.
func (r *Reconciler) instancesOfNode(ctx context.Context, ref winnodev1.ClusterRef, name string) []reconcile.Request {
	var list winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // read only: no copy of the fleet
		return nil
	}
	for _, i := range list.Items {
		if i.Spec.Cluster == ref && i.Status.NodeName == name {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(&i)}}
		}
	}
	return nil
}

// typedNodeReadinessChanged is nodeReadinessChanged for the typed Node
// sources of workload clusters.
type typedNodeReadinessChanged struct{}

func (typedNodeReadinessChanged) Create(event.TypedCreateEvent[*corev1.Node]) bool   { return false }
func (typedNodeReadinessChanged) Delete(event.TypedDeleteEvent[*corev1.Node]) bool   { return true }
func (typedNodeReadinessChanged) Generic(event.TypedGenericEvent[*corev1.Node]) bool { return false }
func (typedNodeReadinessChanged) Update(e event.TypedUpdateEvent[*corev1.Node]) bool {
	return configure.NodeReady(e.ObjectOld) != configure.NodeReady(e.ObjectNew)
}

// forgetGoneCluster ends the deletion of an instance whose Cluster API
// Cluster no longer exists: there is no cluster left to drain or delete
// its Node in, and the infrastructure deletes the host with its Machine.
// The finalizer is removed with a Warning event saying so.
func (r *Reconciler) forgetGoneCluster(ctx context.Context, inst *winnodev1.WindowsInstance, we *workload.Error) (ctrl.Result, error) {
	r.Recorder.Eventf(inst, nil, corev1.EventTypeWarning, we.Reason, "Deconfigure",
		"%s; the host is not cleaned and no Node is deleted: its cluster is gone", we.Error())
	patch := client.MergeFrom(inst.DeepCopy())
	controllerutil.RemoveFinalizer(inst, winnodev1.Finalizer)
	if err := r.Client.Patch(ctx, inst, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing finalizer %s from WindowsInstance %s: %w", winnodev1.Finalizer, inst.Name, err)
	}
	return ctrl.Result{}, nil
}
