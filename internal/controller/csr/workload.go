package csr

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/workload"
)

// Workloads tells of each workload cluster the operator connects to
// (internal/workload.Clusters).
type Workloads interface {
	On() bool
	OnConnect(fn func(*workload.Cluster) error)
}

// WatchWorkloads approves the kubelet CSRs of each Cluster API workload
// cluster the operator acts in, as base approves those of the operator's
// own cluster: one approver per workload cluster, started when the
// operator connects to it and stopped with its connection
// (workload.Cluster.Context). Each reads that cluster's CSRs from its
// cache, checks them against that cluster's Nodes and that Cluster's
// policy (its Service range, DNS domain and node address CIDRs), matches
// them only with the instances joining that cluster, under the same
// identity rules (node names recorded on the instances, the proof of
// adoption recorded in their status before an approval, no name or
// address of that cluster's API server), and approves as winnode's
// ServiceAccount there. The policy is the one read when the
// operator connected: a changed Cluster network takes effect at the next
// connection.
func WatchWorkloads(mgr ctrl.Manager, w Workloads, base *Approver) {
	if w == nil || !w.On() {
		return
	}
	log := mgr.GetLogger().WithName("csr-approver")
	w.OnConnect(func(wc *workload.Cluster) error {
		a := &Approver{
			Client: base.Client, Recorder: base.Recorder, OnDecision: base.OnDecision,
			Cluster: wc.Ref, CSRs: wc.Client, Kube: wc.Kube, Policy: wc.Facts.CSRPolicy(), JoinNamespace: wc.Namespace,
			APIServer: wc.APIServer, Pull: base.Pull,
		}
		ctl, err := controller.NewUnmanaged("csr-approver-"+wc.Ref.Namespace+"-"+wc.Ref.Name, controller.Options{
			Reconciler: a, SkipNameValidation: ptr.To(true), Logger: log.WithValues("cluster", wc.Ref.String()),
		})
		if err != nil {
			return err
		}
		csrs := source.Kind(wc.Cache, &certificatesv1.CertificateSigningRequest{}, &handler.TypedEnqueueRequestForObject[*certificatesv1.CertificateSigningRequest]{})
		instances := source.Kind(mgr.GetCache(), &winnodev1.WindowsInstance{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, wi *winnodev1.WindowsInstance) []reconcile.Request {
				return a.pendingCSRs(ctx, wi)
			}), typedIdentityChanged{})
		if err := ctl.Watch(csrs); err != nil {
			return err
		}
		if err := ctl.Watch(instances); err != nil {
			return err
		}
		go func() {
			if err := ctl.Start(wc.Context()); err != nil {
				log.Error(err, fmt.Sprintf("the CSR approver of the workload cluster of Cluster %s stopped", wc.Ref))
			}
		}()
		return nil
	})
}

// typedIdentityChanged is identityChanged for a typed WindowsInstance
// source.
type typedIdentityChanged struct{}

func (typedIdentityChanged) Create(event.TypedCreateEvent[*winnodev1.WindowsInstance]) bool {
	return true
}
func (typedIdentityChanged) Delete(event.TypedDeleteEvent[*winnodev1.WindowsInstance]) bool {
	return true
}
func (typedIdentityChanged) Generic(event.TypedGenericEvent[*winnodev1.WindowsInstance]) bool {
	return true
}
func (typedIdentityChanged) Update(e event.TypedUpdateEvent[*winnodev1.WindowsInstance]) bool {
	return identityChanged{}.Update(event.UpdateEvent{ObjectOld: e.ObjectOld, ObjectNew: e.ObjectNew})
}
