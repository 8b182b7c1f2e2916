package machineapi

import (
	"context"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/winnode/winnode/internal/machinesource"
)

// Labels and annotations of Machines that the source reads.
const (
	// LabelOSID marks a Windows Machine, as OpenShift's Windows
	// MachineSets do (value "Windows").
	LabelOSID = "machine.openshift.io/os-id"
	// LabelIgnore "true" keeps the source from configuring the Machine.
	LabelIgnore = "winnode.io/ignore"
)

// MachineReconciler keeps one WindowsInstance per provisioned Windows
// Machine of openshift-machine-api (the instance's life:
// internal/machinesource):
//
//   - a Machine labelled machine.openshift.io/os-id: Windows, not labelled
//     winnode.io/ignore: "true", in phase Provisioned or Running with an
//     InternalIP → the pre-terminate hook on the Machine, then a
//     WindowsInstance of the Machine's name (source kind Machine) for that
//     address, with the Machine's spec.providerID for the kubelet;
//   - a changed InternalIP or provider ID → the instance's spec updated;
//   - a Machine whose host refuses the operator's rotated key → deleted,
//     one at a time, for its MachineSet to replace (replace.go);
//   - a Machine being deleted → its instance deleted (deconfigured through
//     its finalizer: drained, services removed, Node deleted); once the
//     instance is gone, the hook is removed and the Machine API terminates
//     the VM.
//
// A Machine whose name is taken by another source's instance, or whose
// address another instance manages, gets a Warning event and nothing else.
type MachineReconciler struct {
	// Client writes Machines.
	Client client.Client
	// Machines reads openshift-machine-api's Machines (the source's cache).
	Machines client.Reader
	// Instances keeps the Machines' WindowsInstances.
	Instances *machinesource.Instances
	Recorder  events.EventRecorder
}

// Reconcile brings one Machine's instance in line with the Machine.
func (r *MachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var m machinev1.Machine
	err := r.Machines.Get(ctx, req.NamespacedName, &m)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	// An OpenShift Machine's instance has the Machine's name.
	inst, ierr := r.Instances.Of(ctx, req.Name, req.NamespacedName)
	if ierr != nil {
		return reconcile.Result{}, ierr
	}
	switch {
	case apierrors.IsNotFound(err):
		// Gone before its hook let it (the hook removed by hand, or the
		// Machine went while the operator was not running).
		if inst != nil {
			return reconcile.Result{}, r.Instances.Delete(ctx, nil, inst)
		}
		return reconcile.Result{}, nil
	case !m.DeletionTimestamp.IsZero():
		if inst == nil {
			return reconcile.Result{}, r.removeHook(ctx, &m)
		}
		return reconcile.Result{}, r.Instances.Delete(ctx, &m, inst)
	case m.Labels[LabelOSID] != "Windows" || m.Labels[LabelIgnore] == "true":
		return reconcile.Result{}, nil
	}
	address := internalIP(&m)
	phase := ptr.Deref(m.Status.Phase, "")
	if address == "" || (phase != machinev1.PhaseProvisioned && phase != machinev1.PhaseRunning) {
		return reconcile.Result{}, nil // its next status change brings it back
	}
	if err := r.addHook(ctx, &m); err != nil {
		return reconcile.Result{}, err
	}
	src := machinesource.Machine{Object: &m, Instance: m.Name, Address: address, ProviderID: ptr.Deref(m.Spec.ProviderID, "")}
	if err := r.Instances.Ensure(ctx, src, inst); err != nil {
		return reconcile.Result{}, err
	}
	return r.replaceIfKeyRefused(ctx, &m, inst)
}

// internalIP is the Machine's first InternalIP address ("" when none).
func internalIP(m *machinev1.Machine) string {
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			return a.Address
		}
	}
	return ""
}
