package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/workload"
)

// watchWorkloadExporters keeps the windows-exporter Service and slices of each
// workload cluster the operator connects to: one controller per cluster,
// started with its connection and stopped with it
// (workload.Cluster.Context), woken by that cluster's Windows Nodes
// coming, going or changing readiness or addresses, and by its
// WindowsInstances (internal/controller/exporter, WorkloadReconciler). It
// is wired here, not in package exporter, which config's tests import and
// internal/workload (which imports config) must stay out of.
func watchWorkloadExporters(mgr ctrl.Manager, w *workload.Clusters, pull exporter.PullNodes) {
	if w == nil || !w.On() {
		return
	}
	log := mgr.GetLogger().WithName("windows-exporter")
	w.OnConnect(func(wc *workload.Cluster) error {
		objects, err := client.New(wc.Config, client.Options{Scheme: mgr.GetScheme(), Mapper: wc.Client.RESTMapper()})
		if err != nil {
			return err
		}
		r := &exporter.WorkloadReconciler{Cluster: wc.Ref, Instances: mgr.GetClient(), Pull: pull, Nodes: wc.Client, Objects: objects, Namespace: wc.Namespace}
		ctl, err := controller.NewUnmanaged("windows-exporter-"+wc.Ref.Namespace+"-"+wc.Ref.Name, controller.Options{
			Reconciler: r, SkipNameValidation: ptr.To(true), Logger: log.WithValues("cluster", wc.Ref.String()),
		})
		if err != nil {
			return err
		}
		one := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wc.Ref.Namespace, Name: wc.Ref.Name}}
		nodes := source.Kind(wc.Cache, &corev1.Node{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(context.Context, *corev1.Node) []reconcile.Request { return []reconcile.Request{one} }), exporter.WindowsNodeChanged{})
		instances := source.Kind(mgr.GetCache(), &winnodev1.WindowsInstance{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, wi *winnodev1.WindowsInstance) []reconcile.Request {
				if wi.Spec.Cluster != wc.Ref {
					return nil
				}
				return []reconcile.Request{one}
			}))
		start := make(chan event.TypedGenericEvent[*corev1.Node], 1)
		start <- event.TypedGenericEvent[*corev1.Node]{Object: &corev1.Node{}}
		first := source.Channel(start, handler.TypedEnqueueRequestsFromMapFunc(
			func(context.Context, *corev1.Node) []reconcile.Request { return []reconcile.Request{one} }))
		for _, s := range []source.Source{nodes, instances, first} {
			if err := ctl.Watch(s); err != nil {
				return err
			}
		}
		go func() {
			if err := ctl.Start(wc.Context()); err != nil {
				log.Error(err, fmt.Sprintf("the windows-exporter controller of the workload cluster of Cluster %s stopped", wc.Ref))
			}
		}()
		return nil
	})
}
