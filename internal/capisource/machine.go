package capisource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/machinesource"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/workload"
)

// MachineReconciler keeps one WindowsInstance per provisioned Cluster API
// Machine that winnode bootstraps (the instance's life:
// internal/machinesource):
//
//   - a Machine whose spec.bootstrap.configRef is a WinnodeConfig of mode
//     Push, whose infrastructure is provisioned, which has an InternalIP,
//     and whose workload cluster (its Cluster's) the operator can act in
//     → winnode's pre-terminate hook on the Machine, then a WindowsInstance
//     named <namespace>.<machine> for that address, joining that workload
//     cluster (spec.cluster), with the Machine's spec.providerID for the
//     kubelet;
//   - a changed InternalIP or provider ID → the instance's spec updated;
//   - a Machine being deleted → its instance deleted (deconfigured through
//     its finalizer: drained, services removed, Node deleted); once the
//     instance is gone, the hook is removed and Cluster API deletes the
//     infrastructure.
type MachineReconciler struct {
	// Client writes Machines (the hook annotation).
	Client client.Client
	// Machines reads Machines and WinnodeConfigs of every namespace (the
	// manager's cache).
	Machines client.Reader
	// Instances keeps the Machines' WindowsInstances.
	Instances *machinesource.Instances
	// Workloads is how the operator acts in each Machine's workload
	// cluster: a Machine's instance is created only once it can.
	Workloads Workloads
}

// Workloads gives the workload cluster of a Cluster, or why it cannot be
// used (internal/workload.Clusters).
type Workloads interface {
	Get(ctx context.Context, ref winnodev1.ClusterRef) (*workload.Cluster, error)
}

// InstanceName is the WindowsInstance name of Machine namespace/name,
// <namespace>.<name>: WindowsInstances are cluster-scoped, Machines are
// not. Where that is longer than an object name may be (a 63-character
// namespace and a 253-character Machine name), its first 242 characters
// and 10 hex digits of its SHA-256; the instance's spec.source names the
// Machine whole.
func InstanceName(namespace, name string) string {
	n := namespace + "." + name
	if len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return strings.TrimRight(n[:242], "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// Reconcile brings one Machine's instance in line with the Machine
// (machinesource.Instances.Reconcile). A Machine whose host the operator
// may not configure yet (not Push, its workload cluster not reachable:
// its WinnodeConfig's conditions say why) is looked at again a little
// later.
func (r *MachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	k := &machineKind{MachineReconciler: r}
	_, _, err := r.Instances.Reconcile(ctx, k, req.NamespacedName)
	if err == nil && k.waiting {
		return reconcile.Result{RequeueAfter: workloadRecheck}, nil
	}
	return reconcile.Result{}, err
}

// workloadRecheck is how soon a Machine whose workload cluster cannot be
// reached is looked at again (the operator reads kubeconfig Secrets by
// name and is not told when one appears).
const workloadRecheck = 10 * time.Second

// machineKind is the Machine source for one reconcile: it reads the
// Machine with what decides whether its host is the operator's to
// configure (its WinnodeConfig's mode, its workload cluster), for
// Provisioned.
type machineKind struct {
	*MachineReconciler
	// why is why the Machine's host is not the operator's to configure
	// (machinesource's reasons; "" when it is).
	why     string
	cluster winnodev1.ClusterRef
	waiting bool
	// nodeName is the node name of the computer name the Machine's
	// WinnodeConfig gave its host.
	nodeName string
}

// Get reads a Machine from the manager's cache, and its config's mode and
// workload cluster when winnode bootstraps it.
func (k *machineKind) Get(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	var m clusterv1.Machine
	if err := k.Machines.Get(ctx, key, &m); err != nil {
		return &m, err
	}
	if !bootstrappedByWinnode(&m) || !m.DeletionTimestamp.IsZero() {
		return &m, nil
	}
	var cfg bootstrapv1.WinnodeConfig
	err := k.Machines.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, &cfg)
	if err != nil {
		k.why = machinesource.NotProvisioned // its config comes with it
		return &m, client.IgnoreNotFound(err)
	}
	if capibootstrap.ModeOfConfig(&cfg) != bootstrapv1.ModePush {
		k.why = machinesource.NotPushMode // Pull: the bootstrap data alone joins the host
		return &m, nil
	}
	k.cluster = winnodev1.ClusterRef{Namespace: m.Namespace, Name: m.Spec.ClusterName}
	if cfg.Status.ComputerName != "" {
		k.nodeName = plan.NodeName(cfg.Status.ComputerName)
	}
	if _, err := k.Workloads.Get(ctx, k.cluster); err != nil {
		var we *workload.Error
		if !errors.As(err, &we) {
			return &m, err
		}
		k.why, k.waiting = machinesource.WorkloadClusterUnusable, true
	}
	return &m, nil
}

// Provisioned is MachineReconciler.Provisioned, for a Push Machine whose
// workload cluster the operator can act in, with that cluster.
func (k *machineKind) Provisioned(obj client.Object) (machinesource.Machine, string) {
	m, why := k.MachineReconciler.Provisioned(obj)
	if why != "" {
		return machinesource.Machine{}, why
	}
	if k.why != "" {
		return machinesource.Machine{}, k.why
	}
	m.Cluster, m.NodeName = k.cluster, k.nodeName
	return m, ""
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
