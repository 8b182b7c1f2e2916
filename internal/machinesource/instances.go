// Package machinesource is what the operator's Machine sources share: the
// OpenShift Machine API's (internal/machineapi) and Cluster API's
// (internal/capisource). Each decides which of its Machines are Windows
// Machines winnode configures, when one is provisioned, and what its
// address, provider ID and hook are; this package keeps the one
// WindowsInstance of such a Machine (source kind Machine) in step with it:
// created once the Machine is provisioned, updated when its address or
// provider ID changes, deleted — and so deconfigured through its finalizer
// — when the Machine is deleted.
package machinesource

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/inventory"
)

// AnnotationUsername on a Machine names the Windows administrator account
// the operator logs in as (default DefaultUsername).
const AnnotationUsername = "winnode.io/username"

// DefaultUsername is the administrator of most Windows images.
const DefaultUsername = "Administrator"

// Instances keeps the WindowsInstances of Machines.
type Instances struct {
	// Client writes WindowsInstances and reads them (the manager's cache).
	Client client.Client
	// APIReader reads past the cache before an instance is created.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Source names the source in metrics: SourceMachineAPI or
	// SourceClusterAPI.
	Source string
	// HostsWithoutInstance lists the hosts that join a cluster with no
	// WindowsInstance of their own: Cluster API's Pull Machines, as the
	// instance forms the CSR approver judges (their status.addresses are
	// their Machines'). An address one of them reports is taken as much as
	// an instance's. Nil: there are none (OpenShift's Machines).
	HostsWithoutInstance func(ctx context.Context, cluster winnodev1.ClusterRef) ([]winnodev1.WindowsInstance, error)
}

// Machine is one Machine as the sources see it.
type Machine struct {
	// Object is the Machine, for events, and Instance the name of its
	// WindowsInstance (Reconcile sets both).
	Object   client.Object
	Instance string
	// Address is its InternalIP; ProviderID its spec.providerID.
	Address, ProviderID string
	// Cluster is the Cluster API Cluster whose workload cluster its host
	// joins (zero: the operator's own cluster, as for OpenShift's Machines).
	Cluster winnodev1.ClusterRef
	// NodeName is the node name winnode itself assigned the host (the
	// computer name its Cluster API bootstrap data gave it, lower-cased):
	// its instance's spec.nodeName ("": the host's reported hostname, as
	// for OpenShift's Machines).
	NodeName string
}

// source is the SourceRef of Machine m.
func (m Machine) source() winnodev1.SourceRef {
	return winnodev1.SourceRef{Kind: winnodev1.SourceMachine, Namespace: m.Object.GetNamespace(), Name: m.Object.GetName()}
}

// Labels select the instances of Machine namespace/name, for a person
// with kubectl: a name longer than a label value may be is hashed
// (winnodev1.LabelValue). Which Machine an instance is of is read from its
// spec.source (MachineOf), never from these labels.
func Labels(namespace, name string) map[string]string {
	return map[string]string{
		winnodev1.LabelSourceKind:      string(winnodev1.SourceMachine),
		winnodev1.LabelSourceNamespace: winnodev1.LabelValue(namespace),
		winnodev1.LabelSourceName:      winnodev1.LabelValue(name),
	}
}

// MachineOf is the Machine a WindowsInstance was made for, from its
// spec.source; false for an instance of another source (or an object that
// is no WindowsInstance).
func MachineOf(o client.Object) (types.NamespacedName, bool) {
	wi, ok := o.(*winnodev1.WindowsInstance)
	if !ok || wi.Spec.Source.Kind != winnodev1.SourceMachine || wi.Spec.Source.Name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: wi.Spec.Source.Namespace, Name: wi.Spec.Source.Name}, true
}

// of is instance name's WindowsInstance when it is Machine key's; nil
// when there is none, or it belongs to something else.
func (s *Instances) of(ctx context.Context, name string, key types.NamespacedName) (*winnodev1.WindowsInstance, error) {
	var wi winnodev1.WindowsInstance
	err := s.Client.Get(ctx, types.NamespacedName{Name: name}, &wi)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading WindowsInstance %s: %w", name, err)
	}
	if of, ok := MachineOf(&wi); !ok || of != key {
		return nil, nil
	}
	return &wi, nil
}

// delete deletes inst, the instance of a Machine that is being deleted or
// is gone (machine nil); its finalizer deconfigures the host first.
func (s *Instances) delete(ctx context.Context, machine client.Object, inst *winnodev1.WindowsInstance) error {
	if !inst.DeletionTimestamp.IsZero() {
		return nil // being deconfigured; its deletion brings the Machine back
	}
	if err := s.Client.Delete(ctx, inst); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("Machine deleted; deconfiguring its host", "instance", inst.Name)
	if machine != nil {
		s.Recorder.Eventf(machine, inst, corev1.EventTypeNormal, "InstanceDeleted", "Delete",
			"Machine %s is being deleted: WindowsInstance %s is being deconfigured; the Machine's termination waits for it", machine.GetName(), inst.Name)
	}
	return nil
}

// ensure creates Machine m's instance, or updates its spec.
func (s *Instances) ensure(ctx context.Context, m Machine, inst *winnodev1.WindowsInstance) error {
	want := s.desired(m)
	if inst == nil {
		return s.create(ctx, m, want)
	}
	if !inst.DeletionTimestamp.IsZero() {
		return nil // deleted by hand: its deletion brings us back to create it afresh
	}
	got := inst.Spec
	if got.Cluster != want.Cluster {
		// Set once (its CRD keeps it from changing): an instance of an
		// older operator, which joined another cluster. Deconfigured from
		// there, then created afresh.
		s.Recorder.Eventf(m.Object, inst, corev1.EventTypeNormal, "InstanceDeleted", "Delete",
			"Machine %s joins the workload cluster of Cluster %s; WindowsInstance %s joined %s: it is deconfigured, then created again",
			m.Object.GetName(), want.Cluster, inst.Name, clusterName(got.Cluster))
		return client.IgnoreNotFound(s.Client.Delete(ctx, inst))
	}
	if got.Address == want.Address && got.Username == want.Username && got.ProviderID == want.ProviderID && got.Port == want.Port {
		return nil
	}
	patch := client.MergeFrom(inst.DeepCopy())
	inst.Spec.Address, inst.Spec.Username, inst.Spec.ProviderID, inst.Spec.Port = want.Address, want.Username, want.ProviderID, want.Port
	if err := s.Client.Patch(ctx, inst, patch); err != nil {
		return fmt.Errorf("updating WindowsInstance %s of Machine %s: %w", inst.Name, m.Object.GetName(), err)
	}
	return nil
}

// desired is the spec of Machine m's instance.
func (s *Instances) desired(m Machine) winnodev1.WindowsInstanceSpec {
	user := m.Object.GetAnnotations()[AnnotationUsername]
	if user == "" {
		user = DefaultUsername
	}
	return winnodev1.WindowsInstanceSpec{Address: m.Address, Username: user, Port: 22, ProviderID: m.ProviderID, Source: m.source(), Cluster: m.Cluster, NodeName: m.NodeName}
}

// clusterName names the cluster an instance joins, for messages.
func clusterName(ref winnodev1.ClusterRef) string {
	if ref.IsZero() {
		return "the operator's own cluster"
	}
	return "the workload cluster of Cluster " + ref.String()
}

// create creates the instance, unless its name or its address is another
// source's.
func (s *Instances) create(ctx context.Context, m Machine, spec winnodev1.WindowsInstanceSpec) error {
	name := m.Object.GetName()
	conflict, err := s.conflict(ctx, m.Instance, name, spec.Address, spec.Cluster)
	if err != nil {
		return err
	}
	if conflict != "" {
		s.Recorder.Eventf(m.Object, nil, corev1.EventTypeWarning, "InstanceConflict", "Create", "%s", conflict)
		return nil
	}
	wi := &winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:   m.Instance,
			Labels: Labels(m.Object.GetNamespace(), name),
			// Set at creation, so no deletion can ever skip deconfiguration.
			Finalizers: []string{winnodev1.Finalizer},
		},
		Spec: spec,
	}
	if err := s.Client.Create(ctx, wi); err != nil {
		return fmt.Errorf("creating WindowsInstance %s for Machine %s: %w", wi.Name, name, err)
	}
	ctrl.LoggerFrom(ctx).Info("created WindowsInstance", "instance", wi.Name, "address", spec.Address, "providerID", spec.ProviderID)
	s.Recorder.Eventf(m.Object, wi, corev1.EventTypeNormal, "InstanceCreated", "Create",
		"Machine %s is provisioned at %s: created WindowsInstance %s", name, spec.Address, wi.Name)
	return nil
}

// conflict says why no instance may be created for Machine machine at
// address in cluster ("" when one may), asking the API server rather than
// the cache: an instance created a moment ago must count. Addresses are
// compared within one cluster only: two workload clusters' private ranges
// may overlap.
func (s *Instances) conflict(ctx context.Context, instance, machine, address string, cluster winnodev1.ClusterRef) (string, error) {
	var all winnodev1.WindowsInstanceList
	if err := s.APIReader.List(ctx, &all); err != nil {
		return "", fmt.Errorf("listing WindowsInstances before creating %s: %w", instance, err)
	}
	want, _ := inventory.NormalizeAddress(address)
	for i := range all.Items {
		wi := &all.Items[i]
		if wi.Name == instance {
			return fmt.Sprintf("WindowsInstance %s exists and belongs to another source (%s); delete it to configure Machine %s", instance, wi.Spec.Source.Kind, machine), nil
		}
		if got, err := inventory.NormalizeAddress(wi.Spec.Address); err == nil && got == want && wi.Spec.Cluster == cluster {
			return fmt.Sprintf("host %s of Machine %s is already managed by WindowsInstance %s (source %s, in %s); nothing is run on the host: delete that instance, or correct the Machine's address, to configure the Machine", address, machine, wi.Name, wi.Spec.Source.Kind, clusterName(cluster)), nil
		}
	}
	return s.conflictWithoutInstance(ctx, machine, address, want, cluster)
}

// conflictWithoutInstance is conflict's check against the hosts that join
// cluster with no WindowsInstance (HostsWithoutInstance): a Push Machine
// reporting a Pull Machine's address would otherwise get an instance, and
// the operator would run programs on the Pull Machine's host.
func (s *Instances) conflictWithoutInstance(ctx context.Context, machine, address, want string, cluster winnodev1.ClusterRef) (string, error) {
	if s.HostsWithoutInstance == nil {
		return "", nil
	}
	hosts, err := s.HostsWithoutInstance(ctx, cluster)
	if err != nil {
		return "", fmt.Errorf("listing the hosts that join %s with no WindowsInstance, before configuring Machine %s: %w", clusterName(cluster), machine, err)
	}
	for _, h := range hosts {
		for _, a := range h.Status.Addresses {
			if got, err := inventory.NormalizeAddress(a); err == nil && got == want {
				src := h.Spec.Source
				return fmt.Sprintf("host %s of Machine %s is also reported by Machine %s/%s, whose host joins %s by itself (Pull mode); nothing is run on the host: correct the Machine's address, or delete one of the two Machines", address, machine, src.Namespace, src.Name, clusterName(cluster)), nil
			}
		}
	}
	return "", nil
}
