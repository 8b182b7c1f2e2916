package capisource

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// Machines reads Machines of every namespace (the source's cache).
	Machines client.Reader
	// Instances keeps the Machines' WindowsInstances.
	Instances *machinesource.Instances
}

// InstanceName is the WindowsInstance name of Machine namespace/name:
// WindowsInstances are cluster-scoped, Machines are not.
func InstanceName(namespace, name string) string { return namespace + "." + name }

// Reconcile brings one Machine's instance in line with the Machine.
func (r *MachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var m clusterv1.Machine
	err := r.Machines.Get(ctx, req.NamespacedName, &m)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	inst, ierr := r.Instances.Of(ctx, InstanceName(req.Namespace, req.Name), req.NamespacedName)
	if ierr != nil {
		return reconcile.Result{}, ierr
	}
	switch {
	case apierrors.IsNotFound(err):
		if inst != nil { // gone before its hook let it
			return reconcile.Result{}, r.Instances.Delete(ctx, nil, inst)
		}
		return reconcile.Result{}, nil
	case !m.DeletionTimestamp.IsZero():
		if inst == nil {
			return reconcile.Result{}, r.setHook(ctx, &m, false)
		}
		return reconcile.Result{}, r.Instances.Delete(ctx, &m, inst)
	case !bootstrappedByWinnode(&m):
		return reconcile.Result{}, nil
	}
	address := internalIP(&m)
	if address == "" || !ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false) || m.Spec.ProviderID == "" {
		return reconcile.Result{}, nil // its next status change brings it back
	}
	if err := r.setHook(ctx, &m, true); err != nil {
		return reconcile.Result{}, err
	}
	src := machinesource.Machine{Object: &m, Instance: InstanceName(m.Namespace, m.Name), Address: address, ProviderID: m.Spec.ProviderID}
	return reconcile.Result{}, r.Instances.Ensure(ctx, src, inst)
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
