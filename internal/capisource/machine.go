package capisource

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/machinesource"
)

// MachineReconciler keeps one WindowsInstance per provisioned Cluster API
// Machine that winnode bootstraps (the instance's life:
// internal/machinesource):
//
//   - a Machine whose spec.bootstrap.configRef is a WinnodeConfig, whose
//     infrastructure is provisioned and which has an InternalIP → winnode's
//     pre-terminate hook on the Machine, then a WindowsInstance named
//     <namespace>.<machine> for that address, with the Machine's
//     spec.providerID for the kubelet;
//   - a changed InternalIP or provider ID → the instance's spec updated;
//   - a Machine being deleted → its instance deleted (deconfigured through
//     its finalizer: drained, services removed, Node deleted); once the
//     instance is gone, the hook is removed and Cluster API deletes the
//     infrastructure.
type MachineReconciler struct {
	// Client writes Machines (the hook annotation).
	Client client.Client
	// Machines reads Machines of every namespace (the manager's cache).
	Machines client.Reader
	// Instances keeps the Machines' WindowsInstances.
	Instances *machinesource.Instances
}

// InstanceName is the WindowsInstance name of Machine namespace/name:
// WindowsInstances are cluster-scoped, Machines are not.
func InstanceName(namespace, name string) string { return namespace + "." + name }

// Reconcile brings one Machine's instance in line with the Machine
// (machinesource.Instances.Reconcile).
func (r *MachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	_, _, err := r.Instances.Reconcile(ctx, r, req.NamespacedName)
	return reconcile.Result{}, err
}

// Get reads a Machine from the manager's cache.
func (r *MachineReconciler) Get(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	var m clusterv1.Machine
	return &m, r.Machines.Get(ctx, key, &m)
}

// InstanceName is <namespace>.<machine> (InstanceName).
func (r *MachineReconciler) InstanceName(key types.NamespacedName) string {
	return InstanceName(key.Namespace, key.Name)
}

// Provisioned says whether winnode bootstraps the Machine and its
// infrastructure is provisioned, with an InternalIP and a provider ID; if
// not, why not.
func (r *MachineReconciler) Provisioned(obj client.Object) (machinesource.Machine, string) {
	m := obj.(*clusterv1.Machine)
	if !bootstrappedByWinnode(m) {
		return machinesource.Machine{}, machinesource.NotWindows
	}
	address := internalIP(m)
	if address == "" || !ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false) || m.Spec.ProviderID == "" {
		return machinesource.Machine{}, machinesource.NotProvisioned
	}
	return machinesource.Machine{Address: address, ProviderID: m.Spec.ProviderID}, ""
}

// bootstrappedByWinnode reports whether m's bootstrap config is a
// WinnodeConfig.
func bootstrappedByWinnode(m *clusterv1.Machine) bool {
	ref := m.Spec.Bootstrap.ConfigRef
	return ref.APIGroup == bootstrapv1.GroupVersion.Group && ref.Kind == "WinnodeConfig"
}

// internalIP is the Machine's first InternalIP address ("" when none).
func internalIP(m *clusterv1.Machine) string {
	for _, a := range m.Status.Addresses {
		if a.Type == clusterv1.MachineInternalIP && a.Address != "" {
			return a.Address
		}
	}
	return ""
}
