// Package exporter keeps the Service windows-exporter, without a selector,
// and its EndpointSlices (discovery.k8s.io/v1; core Endpoints are
// deprecated) listing the Ready Windows nodes winnode configured, at their
// InternalIP and windows_exporter's port 9182, so that Prometheus finds
// them (a ServiceMonitor, config/prometheus). It also makes sure the
// metrics CA exists and is published for scrapers (internal/metricstls),
// or, on OpenShift, asks the service CA for the exporter's certificate and
// its bundle (servicecabundle.go).
package exporter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/plan"
)

// The Service and its slices, in the operator's namespace; the Nodes and
// WindowsInstances are read from the cache (the instance controller's
// rights).
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=services,resourceNames=windows-exporter,verbs=update
// +kubebuilder:rbac:groups=discovery.k8s.io,namespace=winnode-system,resources=endpointslices,verbs=get;list;watch;create;update;delete

// LabelName is the Service's app.kubernetes.io/name, which the
// ServiceMonitor selects.
const LabelName = "windows-exporter"

// Reconciler keeps the Service and its EndpointSlices. One key does it all:
// any change of a Node, a WindowsInstance or a slice recomputes the whole.
type Reconciler struct {
	Client    client.Client
	Namespace string
	// CA, when set, makes and publishes the metrics CA at each pass (a
	// scraper's configuration can then mount it before any node exists).
	CA *metricstls.Store
	// ServiceCA (OpenShift) asks the platform's service CA for the
	// exporter's certificate instead: the Service names the Secret the
	// service-ca controller writes, and the ConfigMap windows-exporter-ca
	// asks for the CA bundle (servicecabundle.go).
	ServiceCA bool
}

// key is the one request this controller handles.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: ServiceName}}

// Reconcile brings the Service and the slices to what the nodes say.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if r.CA != nil {
		if _, err := r.CA.CA(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	if r.ServiceCA {
		if err := r.askCABundle(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	svc, err := r.service(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	nodes, keep, err := r.windowsNodes(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if r.CA != nil {
		if err := r.CA.Prune(ctx, keep); err != nil {
			return reconcile.Result{}, err
		}
	}
	eps, skipped := Endpoints(nodes)
	for _, s := range skipped {
		log.Info("a Windows node is left out of the windows-exporter EndpointSlices", "node", s.Node, "reason", s.Reason)
	}
	return reconcile.Result{}, r.applySlices(ctx, OwnSlices(), DesiredSlices(r.Namespace, ownerOf(svc), eps))
}

// ownerOf is the slices' owner reference to their Service: they go with it.
func ownerOf(svc *corev1.Service) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}
}

// windowsNodes are the Nodes of the WindowsInstances (status.nodeName):
// the Windows nodes winnode configured, which run windows_exporter; and
// the names of all of them, registered or not (whose certificates stay).
func (r *Reconciler) windowsNodes(ctx context.Context) ([]*corev1.Node, map[string]bool, error) {
	var insts winnodev1.WindowsInstanceList
	// Read only: the cache's objects, not a copy of the whole fleet.
	if err := r.Client.List(ctx, &insts, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	var nodes []*corev1.Node
	names := map[string]bool{}
	for _, inst := range insts.Items {
		if inst.Status.NodeName == "" || !inst.Spec.Cluster.IsZero() {
			continue // no node yet, or a node of another (workload) cluster
		}
		names[inst.Status.NodeName] = true
		n := &corev1.Node{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: inst.Status.NodeName}, n)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, names, nil
}

// desiredService is the Service without a selector: headless (scrapers
// reach each node, not a virtual IP), one port, 9182; with ServiceCA, it
// names the Secret the service-ca controller writes for it.
func (r *Reconciler) desiredService() *corev1.Service {
	var annotations map[string]string
	if r.ServiceCA {
		annotations = map[string]string{metricstls.AnnotationServingCertSecret: metricstls.ServiceCASecretName}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: r.Namespace, Annotations: annotations, Labels: map[string]string{
			"app.kubernetes.io/name": LabelName, "app.kubernetes.io/part-of": "winnode", "app.kubernetes.io/managed-by": "winnode",
		}},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: PortName, Protocol: corev1.ProtocolTCP, Port: plan.WindowsExporterPort,
				TargetPort: intstr.FromInt32(plan.WindowsExporterPort)}},
		},
	}
}

// service creates the Service, or puts its labels and ports back.
func (r *Reconciler) service(ctx context.Context) (*corev1.Service, error) {
	want := r.desiredService()
	got := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), got)
	if apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, want); err != nil {
			return nil, fmt.Errorf("creating Service %s/%s: %w", r.Namespace, ServiceName, err)
		}
		return want, nil
	}
	if err != nil {
		return nil, err
	}
	if got.Spec.Selector != nil {
		return nil, fmt.Errorf("the Service %s/%s has a selector: it is not winnode's (delete it for winnode to make its own)", r.Namespace, ServiceName)
	}
	if hasAll(got.Labels, want.Labels) && hasAll(got.Annotations, want.Annotations) && equality.Semantic.DeepEqual(got.Spec.Ports, want.Spec.Ports) {
		return got, nil
	}
	got.Labels = putAll(got.Labels, want.Labels)
	got.Annotations = putAll(got.Annotations, want.Annotations)
	got.Spec.Ports = want.Spec.Ports
	if err := r.Client.Update(ctx, got); err != nil {
		return nil, fmt.Errorf("restoring Service %s/%s: %w", r.Namespace, ServiceName, err)
	}
	return got, nil
}

// applySlices creates or updates the desired slices and deletes the
// others of set (listed by its labels).
func (r *Reconciler) applySlices(ctx context.Context, set SliceSet, want []*discoveryv1.EndpointSlice) error {
	var have discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &have, client.InNamespace(r.Namespace), client.MatchingLabels(set.Labels)); err != nil {
		return err
	}
	byName := map[string]*discoveryv1.EndpointSlice{}
	for i := range have.Items {
		byName[have.Items[i].Name] = &have.Items[i]
	}
	for _, w := range want {
		got, ok := byName[w.Name]
		delete(byName, w.Name)
		var err error
		switch {
		case !ok:
			err = client.IgnoreAlreadyExists(r.Client.Create(ctx, w))
		case !equality.Semantic.DeepEqual(got.Endpoints, w.Endpoints) || !equality.Semantic.DeepEqual(got.Ports, w.Ports) ||
			!equality.Semantic.DeepEqual(got.OwnerReferences, w.OwnerReferences):
			got.Endpoints, got.Ports, got.OwnerReferences = w.Endpoints, w.Ports, w.OwnerReferences
			err = r.Client.Update(ctx, got)
		}
		if err != nil {
			return fmt.Errorf("EndpointSlice %s/%s: %w", r.Namespace, w.Name, err)
		}
	}
	for _, extra := range byName {
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, extra)); err != nil {
			return fmt.Errorf("deleting EndpointSlice %s/%s: %w", r.Namespace, extra.Name, err)
		}
	}
	return nil
}

// SetupWithManager watches what the slices depend on, and asks once at
// start.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: r.Namespace}}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{key} })
	windows := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[corev1.LabelOSStable] == string(corev1.Windows)
	})
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && (o.GetName() == ServiceName || o.GetLabels()[discoveryv1.LabelServiceName] == ServiceName)
	})
	endpointChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || EndpointChanged(o, n)
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("windows-exporter").
		WatchesRawSource(source.Channel(start, one)).
		Watches(&corev1.Node{}, one, builder.WithPredicates(windows, endpointChanged)).
		Watches(&winnodev1.WindowsInstance{}, one).
		Watches(&corev1.Service{}, one, builder.WithPredicates(ours)).
		Watches(&discoveryv1.EndpointSlice{}, one, builder.WithPredicates(ours)).
		Complete(r)
}
