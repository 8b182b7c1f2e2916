package machineapi

import (
	"context"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// Machines reads openshift-machine-api's Machines (the manager's cache).
	Machines client.Reader
	// Instances keeps the Machines' WindowsInstances.
	Instances *machinesource.Instances
	Recorder  events.EventRecorder
}

// Reconcile brings one Machine's instance in line with the Machine
// (machinesource.Instances.Reconcile), then replaces the Machine if its
// host refuses the rotated key.
func (r *MachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m, inst, err := r.Instances.Reconcile(ctx, r, req.NamespacedName)
	if err != nil || m == nil {
		return reconcile.Result{}, err
	}
	return r.replaceIfKeyRefused(ctx, m.(*machinev1.Machine), inst)
}

// Get reads a Machine of openshift-machine-api from the manager's cache.
func (r *MachineReconciler) Get(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	var m machinev1.Machine
	return &m, r.Machines.Get(ctx, key, &m)
}

// InstanceName is the Machine's name: its namespace is always
// openshift-machine-api.
func (r *MachineReconciler) InstanceName(key types.NamespacedName) string { return key.Name }

// Provisioned says whether winnode configures the Machine (labelled
// Windows, not ignored) and it is Provisioned or Running with an
// InternalIP; if not, why not.
func (r *MachineReconciler) Provisioned(obj client.Object) (machinesource.Machine, string) {
	m := obj.(*machinev1.Machine)
	switch {
	case m.Labels[LabelOSID] != "Windows":
		return machinesource.Machine{}, machinesource.NotWindows
	case m.Labels[LabelIgnore] == "true":
		return machinesource.Machine{}, machinesource.Ignored
	}
	address := internalIP(m)
	phase := ptr.Deref(m.Status.Phase, "")
	if address == "" || (phase != machinev1.PhaseProvisioned && phase != machinev1.PhaseRunning) {
		return machinesource.Machine{}, machinesource.NotProvisioned
	}
	return machinesource.Machine{Address: address, ProviderID: ptr.Deref(m.Spec.ProviderID, "")}, ""
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
