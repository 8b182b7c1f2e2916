package machineapi

import (
	"context"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/optional"
	"github.com/winnode/winnode/internal/machinesource"
)

// Namespace is where OpenShift's Machine API keeps Machines and MachineSets
// and reconciles them; Machines elsewhere are not the Machine API's.
const Namespace = "openshift-machine-api"

// What the source needs, in openshift-machine-api only
// (config/openshift/machine_api_rbac.yaml grants it, with the reasons).
// +kubebuilder:rbac:groups=machine.openshift.io,namespace=openshift-machine-api,resources=machines,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",namespace=openshift-machine-api,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=openshift-machine-api,resources=secrets,resourceNames=windows-user-data,verbs=get;update

// Options configure the source.
type Options struct {
	// OperatorNamespace holds Secret UserDataSecret, which is copied.
	OperatorNamespace string
	// UserDataSecret and UserDataKey name the user data Secret and its key
	// (internal/controller/keys writes it).
	UserDataSecret, UserDataKey string
}

// Part is the source as an optional part of the operator
// (internal/controller/optional): on where the cluster serves the Machine
// API's Machines. The manager's cache keeps the Machines of
// openshift-machine-api only: Machines elsewhere are not the Machine API's,
// and the operator may list and watch them there alone (a Role).
func Part(opts Options) optional.Part {
	return optional.Part{
		Name:        "Machine API source",
		Requires:    []schema.GroupVersionResource{machinev1.GroupVersion.WithResource("machines")},
		AddToScheme: []func(*runtime.Scheme) error{machinev1.Install},
		Cache: map[client.Object]cache.ByObject{
			&machinev1.Machine{}: {Namespaces: map[string]cache.Config{Namespace: {}}},
		},
		Setup: func(mgr ctrl.Manager) error {
			if err := setupMachines(mgr, mgr.GetEventRecorder("winnode-machine-api")); err != nil {
				return err
			}
			return setupUserData(mgr, opts)
		},
	}
}

// setupMachines watches Machines and WindowsInstances of Machines (a
// deleted instance lets its Machine's termination go on).
func setupMachines(mgr ctrl.Manager, recorder events.EventRecorder) error {
	r := &MachineReconciler{Client: mgr.GetClient(), Machines: mgr.GetClient(), Recorder: recorder,
		Instances: &machinesource.Instances{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Source: machinesource.SourceMachineAPI}}
	ofMachine := predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()
		return l[winnodev1.LabelSourceKind] == string(winnodev1.SourceMachine) && l[winnodev1.LabelSourceNamespace] == Namespace
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine-api-source").
		For(&machinev1.Machine{}).
		Watches(&winnodev1.WindowsInstance{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: Namespace, Name: o.GetLabels()[winnodev1.LabelSourceName]}}}
			}), builder.WithPredicates(ofMachine)).
		Complete(r)
}
