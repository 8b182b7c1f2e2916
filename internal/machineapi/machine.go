package machineapi

import (
	"context"
	"fmt"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/inventory"
)

// Labels and annotations of Machines that the source reads.
const (
	// LabelOSID marks a Windows Machine, as OpenShift's Windows
	// MachineSets do (value "Windows").
	LabelOSID = "machine.openshift.io/os-id"
	// LabelIgnore "true" keeps the source from configuring the Machine.
	LabelIgnore = "winnode.io/ignore"
	// AnnotationUsername names the Windows administrator account the
	// operator logs in as (default DefaultUsername).
	AnnotationUsername = "winnode.io/username"
	// DefaultUsername is the administrator of Windows images on AWS,
	// vSphere templates and most others.
	DefaultUsername = "Administrator"
)

// MachineReconciler keeps one WindowsInstance per provisioned Windows
// Machine of openshift-machine-api:
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
	// Client writes Machines and WindowsInstances and reads the instances
	// (the manager's cache).
	Client client.Client
	// Machines reads openshift-machine-api's Machines (the source's cache).
	Machines client.Reader
	// APIReader reads past the caches before an instance is created.
	APIReader client.Reader
	Recorder  events.EventRecorder
}

// Reconcile brings one Machine's instance in line with the Machine.
func (r *MachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var m machinev1.Machine
	err := r.Machines.Get(ctx, req.NamespacedName, &m)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, r.machineGone(ctx, req.NamespacedName)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	inst, err := r.instanceOf(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !m.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.machineDeleting(ctx, &m, inst)
	}
	if m.Labels[LabelOSID] != "Windows" || m.Labels[LabelIgnore] == "true" {
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
	if err := r.ensureInstance(ctx, &m, inst, address); err != nil {
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

// instanceOf is the Machine's instance, nil when it has none.
func (r *MachineReconciler) instanceOf(ctx context.Context, key types.NamespacedName) (*winnodev1.WindowsInstance, error) {
	var wi winnodev1.WindowsInstance
	err := r.Client.Get(ctx, types.NamespacedName{Name: key.Name}, &wi)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading WindowsInstance %s: %w", key.Name, err)
	}
	if !isOf(&wi, key) {
		return nil, nil
	}
	return &wi, nil
}

// isOf reports whether wi is the instance of Machine key.
func isOf(wi *winnodev1.WindowsInstance, key types.NamespacedName) bool {
	l := wi.Labels
	return l[winnodev1.LabelSourceKind] == string(winnodev1.SourceMachine) &&
		l[winnodev1.LabelSourceNamespace] == key.Namespace && l[winnodev1.LabelSourceName] == key.Name
}

// machineGone deletes the instance of a Machine that no longer exists (its
// hook was removed by hand, or the Machine went before this operator ran).
func (r *MachineReconciler) machineGone(ctx context.Context, key types.NamespacedName) error {
	inst, err := r.instanceOf(ctx, key)
	if err != nil || inst == nil || !inst.DeletionTimestamp.IsZero() {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Machine gone; deleting its WindowsInstance", "instance", inst.Name)
	return client.IgnoreNotFound(r.Client.Delete(ctx, inst))
}

// machineDeleting deletes the instance of a Machine being deleted, and
// releases the Machine's termination once the instance is gone.
func (r *MachineReconciler) machineDeleting(ctx context.Context, m *machinev1.Machine, inst *winnodev1.WindowsInstance) error {
	if inst == nil {
		return r.removeHook(ctx, m)
	}
	if !inst.DeletionTimestamp.IsZero() {
		return nil // being deconfigured; its deletion brings us back
	}
	if err := r.Client.Delete(ctx, inst); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("Machine being deleted; deconfiguring its host", "instance", inst.Name)
	r.Recorder.Eventf(m, inst, corev1.EventTypeNormal, "InstanceDeleted", "Delete",
		"Machine %s is being deleted: WindowsInstance %s is being deconfigured; the Machine's termination waits for it", m.Name, inst.Name)
	return nil
}

// desired is the spec of Machine m's instance.
func desired(m *machinev1.Machine, address string) winnodev1.WindowsInstanceSpec {
	user := m.Annotations[AnnotationUsername]
	if user == "" {
		user = DefaultUsername
	}
	return winnodev1.WindowsInstanceSpec{
		Address:    address,
		Username:   user,
		Port:       22,
		ProviderID: ptr.Deref(m.Spec.ProviderID, ""),
		Source:     winnodev1.SourceRef{Kind: winnodev1.SourceMachine, Namespace: m.Namespace, Name: m.Name},
	}
}

// ensureInstance creates Machine m's instance, or updates its spec.
func (r *MachineReconciler) ensureInstance(ctx context.Context, m *machinev1.Machine, inst *winnodev1.WindowsInstance, address string) error {
	want := desired(m, address)
	if inst == nil {
		return r.createInstance(ctx, m, want)
	}
	if !inst.DeletionTimestamp.IsZero() {
		return nil // deleted by hand: its deletion brings us back to create it afresh
	}
	got := inst.Spec
	if got.Address == want.Address && got.Username == want.Username && got.ProviderID == want.ProviderID && got.Port == want.Port {
		return nil
	}
	patch := client.MergeFrom(inst.DeepCopy())
	inst.Spec.Address, inst.Spec.Username, inst.Spec.ProviderID, inst.Spec.Port = want.Address, want.Username, want.ProviderID, want.Port
	if err := r.Client.Patch(ctx, inst, patch); err != nil {
		return fmt.Errorf("updating WindowsInstance %s of Machine %s: %w", inst.Name, m.Name, err)
	}
	return nil
}

// createInstance creates the instance, unless its name or its address is
// another source's.
func (r *MachineReconciler) createInstance(ctx context.Context, m *machinev1.Machine, spec winnodev1.WindowsInstanceSpec) error {
	conflict, err := r.conflict(ctx, m.Name, spec.Address)
	if err != nil {
		return err
	}
	if conflict != "" {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, "InstanceConflict", "Create", "%s", conflict)
		return nil
	}
	wi := &winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name,
			Labels: map[string]string{
				winnodev1.LabelSourceKind:      string(winnodev1.SourceMachine),
				winnodev1.LabelSourceNamespace: m.Namespace,
				winnodev1.LabelSourceName:      m.Name,
			},
			// Set at creation, so no deletion can ever skip deconfiguration.
			Finalizers: []string{winnodev1.Finalizer},
		},
		Spec: spec,
	}
	if err := r.Client.Create(ctx, wi); err != nil {
		return fmt.Errorf("creating WindowsInstance %s for Machine %s: %w", wi.Name, m.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("created WindowsInstance", "instance", wi.Name, "address", spec.Address, "providerID", spec.ProviderID)
	r.Recorder.Eventf(m, wi, corev1.EventTypeNormal, "InstanceCreated", "Create",
		"Machine %s is provisioned at %s: created WindowsInstance %s", m.Name, spec.Address, wi.Name)
	return nil
}

// conflict says why no instance may be created for Machine name at
// address ("" when one may), asking the API server rather than the cache:
// an instance created a moment ago must count.
func (r *MachineReconciler) conflict(ctx context.Context, name, address string) (string, error) {
	var all winnodev1.WindowsInstanceList
	if err := r.APIReader.List(ctx, &all); err != nil {
		return "", fmt.Errorf("listing WindowsInstances before creating %s: %w", name, err)
	}
	want, _ := inventory.NormalizeAddress(address)
	for i := range all.Items {
		wi := &all.Items[i]
		if wi.Name == name {
			return fmt.Sprintf("WindowsInstance %s exists and belongs to another source (%s); delete it to configure Machine %s", name, wi.Spec.Source.Kind, name), nil
		}
		if got, err := inventory.NormalizeAddress(wi.Spec.Address); err == nil && got == want {
			return fmt.Sprintf("host %s of Machine %s is already managed by WindowsInstance %s (source %s); delete that instance to configure the Machine", address, name, wi.Name, wi.Spec.Source.Kind), nil
		}
	}
	return "", nil
}
