package machineapi

import (
	"context"
	"fmt"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/machinesource"
	"github.com/winnode/winnode/internal/platform"
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
	// (internal/controller's KeysReconciler writes it).
	UserDataSecret, UserDataKey string
}

// machines is what the source needs the API server to serve.
var machines = machinev1.GroupVersion.WithResource("machines")

// Setup adds the Machine source to mgr when the cluster serves the Machine
// API; otherwise it logs why not and adds nothing. The manager's own cache
// may cover the operator namespace only (cmd/winnode-operator), so the
// source keeps a cache of its own for openshift-machine-api's Machines.
func Setup(mgr ctrl.Manager, opts Options) error {
	log := mgr.GetLogger().WithName("machine-api")
	ok, why, err := platform.ServesAt(mgr.GetConfig(), machines)
	if err != nil {
		return err
	}
	if !ok {
		log.Info("Machine API source off: " + why)
		return nil
	}
	if err := machinev1.Install(mgr.GetScheme()); err != nil {
		return err
	}
	machines, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{Namespace: {}},
	})
	if err != nil {
		return fmt.Errorf("building the cache of %s: %w", Namespace, err)
	}
	if err := mgr.Add(machines); err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder("winnode-machine-api")
	if err := setupMachines(mgr, machines, recorder); err != nil {
		return err
	}
	log.Info("Machine API source on", "namespace", Namespace)
	return setupUserData(mgr, opts)
}

// setupMachines watches Machines (their cache) and WindowsInstances of
// Machines (a deleted instance lets its Machine's termination go on).
func setupMachines(mgr ctrl.Manager, machines cache.Cache, recorder events.EventRecorder) error {
	r := &MachineReconciler{Client: mgr.GetClient(), Machines: machines, Recorder: recorder,
		Instances: &machinesource.Instances{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder}}
	ofMachine := predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()
		return l[winnodev1.LabelSourceKind] == string(winnodev1.SourceMachine) && l[winnodev1.LabelSourceNamespace] == Namespace
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine-api-source").
		WatchesRawSource(source.Kind(machines, &machinev1.Machine{}, &handler.TypedEnqueueRequestForObject[*machinev1.Machine]{})).
		Watches(&winnodev1.WindowsInstance{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: Namespace, Name: o.GetLabels()[winnodev1.LabelSourceName]}}}
			}), builder.WithPredicates(ofMachine)).
		Complete(r)
}
