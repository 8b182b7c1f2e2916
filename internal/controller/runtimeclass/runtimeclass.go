// Package runtimeclass keeps one RuntimeClass per Windows Server release,
// so that a workload names its Windows release once (Reconciler).
package runtimeclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Handler is the containerd runtime handler of Windows
// process-isolated containers: containerd's default runtime on Windows
// (`runhcs-wcow-process` in its default CRI configuration). The kubelet
// asks containerd for it by name; a handler containerd does not have fails
// every pod of the RuntimeClass.
const Handler = "runhcs-wcow-process"

// LabelManagedBy marks the RuntimeClasses winnode keeps: one of the same
// name without it is someone else's and is left alone.
const LabelManagedBy = "app.kubernetes.io/managed-by"

// EventReasonNotOurs is the warning about a RuntimeClass of one
// of winnode's names that winnode did not make.
const EventReasonNotOurs = "RuntimeClassNotManaged"

// WindowsReleases are the Windows Server releases winnode keeps a
// RuntimeClass for, by RuntimeClass name, with the OS build their nodes
// carry in label node.kubernetes.io/windows-build (Microsoft's Windows
// Server release information: 2019 is 10.0.17763, 2022 10.0.20348, 2025
// 10.0.26100).
var WindowsReleases = map[string]string{
	"windows-2019": "10.0.17763",
	"windows-2022": "10.0.20348",
	"windows-2025": "10.0.26100",
}

// RuntimeClasses of Windows releases: created, and put back when changed or
// deleted, by name only.
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,resourceNames=windows-2019;windows-2022;windows-2025,verbs=update;delete

// Reconciler keeps one RuntimeClass per Windows Server release
// (WindowsReleases), so that a workload names its Windows release once
// (`runtimeClassName: windows-2022`) and the RuntimeClass admission plugin
// gives its pods the node selector of that release's build and the
// toleration of winnode's taint, as Kubernetes' "Guide for scheduling
// Windows containers" recommends. Process isolation, Windows' default,
// runs only images of the host's own build.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// Reconcile creates or restores one release's RuntimeClass.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	build, ok := WindowsReleases[req.Name]
	if !ok {
		return reconcile.Result{}, nil
	}
	want := desiredRuntimeClass(req.Name, build)
	var got nodev1.RuntimeClass
	err := r.Client.Get(ctx, client.ObjectKey{Name: req.Name}, &got)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating RuntimeClass %s: %w", req.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("created RuntimeClass", "runtimeClass", req.Name, "windowsBuild", build)
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, err
	case got.Labels[LabelManagedBy] != managedBy:
		r.Recorder.Eventf(&got, nil, corev1.EventTypeWarning, EventReasonNotOurs, "Check",
			"RuntimeClass %s was not made by winnode (no label %s=%s): winnode leaves it as it is; delete it for winnode to make its own (Windows build %s)",
			req.Name, LabelManagedBy, managedBy, build)
		return reconcile.Result{}, nil
	case got.Handler != want.Handler:
		// The handler cannot be changed: make the RuntimeClass again. Its
		// deletion, which the controller watches, brings it back here to
		// create it.
		if err := r.Client.Delete(ctx, &got); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	case equality.Semantic.DeepEqual(got.Scheduling, want.Scheduling) && got.Overhead == nil:
		return reconcile.Result{}, nil
	}
	got.Scheduling, got.Overhead = want.Scheduling, nil
	if err := r.Client.Update(ctx, &got); err != nil {
		return reconcile.Result{}, fmt.Errorf("restoring RuntimeClass %s: %w", req.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("restored RuntimeClass", "runtimeClass", req.Name)
	return reconcile.Result{}, nil
}

// managedBy is winnode's value of LabelManagedBy.
const managedBy = "winnode"

// desiredRuntimeClass is the RuntimeClass of a Windows release: pods that
// name it are scheduled only onto Windows nodes of that build, and
// tolerate winnode's taint os=Windows:NoSchedule.
func desiredRuntimeClass(name, build string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelManagedBy: managedBy}},
		Handler:    Handler,
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{
				corev1.LabelOSStable:     string(corev1.Windows),
				corev1.LabelWindowsBuild: build,
			},
			Tolerations: []corev1.Toleration{{
				Key: "os", Operator: corev1.TolerationOpEqual, Value: "Windows", Effect: corev1.TaintEffectNoSchedule,
			}},
		},
	}
}

// SetupWithManager watches winnode's RuntimeClasses and asks for each of
// them once at start, so that missing ones are created.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("winnode-runtimeclasses")
	}
	start := make(chan event.TypedGenericEvent[*nodev1.RuntimeClass], len(WindowsReleases))
	for name := range WindowsReleases {
		start <- event.TypedGenericEvent[*nodev1.RuntimeClass]{Object: &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := WindowsReleases[o.GetName()]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("runtimeclass").
		For(&nodev1.RuntimeClass{}, builder.WithPredicates(ours)).
		WatchesRawSource(source.Channel(start, &handler.TypedEnqueueRequestForObject[*nodev1.RuntimeClass]{})).
		Complete(r)
}
