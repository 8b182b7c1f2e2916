package builder

import (
	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// OpenShiftMachineBuilder builds an OpenShift Machine API Machine
// (machine.openshift.io/v1beta1).
type OpenShiftMachineBuilder struct{ obj machinev1.Machine }

// OpenShiftMachine starts a Machine of the OpenShift Machine API.
func OpenShiftMachine(namespace, name string) *OpenShiftMachineBuilder {
	return &OpenShiftMachineBuilder{obj: machinev1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// Labels adds labels.
func (b *OpenShiftMachineBuilder) Labels(labels map[string]string) *OpenShiftMachineBuilder {
	b.obj.Labels = merge(b.obj.Labels, labels)
	return b
}

// ControlledBy makes a MachineSet named set the Machine's controller, as
// when the MachineSet made it.
func (b *OpenShiftMachineBuilder) ControlledBy(set string) *OpenShiftMachineBuilder {
	b.obj.OwnerReferences = append(b.obj.OwnerReferences, metav1.OwnerReference{
		APIVersion: machinev1.GroupVersion.String(), Kind: "MachineSet", Name: set, Controller: ptr.To(true)})
	return b
}

// ProviderSpec sets spec.providerSpec.value.
func (b *OpenShiftMachineBuilder) ProviderSpec(value *runtime.RawExtension) *OpenShiftMachineBuilder {
	b.obj.Spec.ProviderSpec.Value = value
	return b
}

// ProviderID sets spec.providerID.
func (b *OpenShiftMachineBuilder) ProviderID(id string) *OpenShiftMachineBuilder {
	b.obj.Spec.ProviderID = ptr.To(id)
	return b
}

// Phase sets status.phase (machinev1.PhaseProvisioned, PhaseRunning…).
func (b *OpenShiftMachineBuilder) Phase(phase string) *OpenShiftMachineBuilder {
	b.obj.Status.Phase = ptr.To(phase)
	return b
}

// Address adds an address to the status, as the Machine controller copies
// it from the cloud.
func (b *OpenShiftMachineBuilder) Address(typ corev1.NodeAddressType, address string) *OpenShiftMachineBuilder {
	b.obj.Status.Addresses = append(b.obj.Status.Addresses, corev1.NodeAddress{Type: typ, Address: address})
	return b
}

// Build returns the Machine.
func (b *OpenShiftMachineBuilder) Build() *machinev1.Machine {
	return b.obj.DeepCopy()
}
