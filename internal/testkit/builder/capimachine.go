package builder

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// CAPIMachineBuilder builds a Cluster API Machine
// (cluster.x-k8s.io/v1beta2).
type CAPIMachineBuilder struct{ obj clusterv1.Machine }

// CAPIMachine starts a Machine of Cluster API.
func CAPIMachine(namespace, name string) *CAPIMachineBuilder {
	return &CAPIMachineBuilder{obj: clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// Cluster puts the Machine in a cluster: spec.clusterName and the
// cluster-name label, as a MachineDeployment's Machines have them.
func (b *CAPIMachineBuilder) Cluster(name string) *CAPIMachineBuilder {
	b.obj.Spec.ClusterName = name
	b.obj.Labels = merge(b.obj.Labels, map[string]string{clusterv1.ClusterNameLabel: name})
	return b
}

// Bootstrap sets the bootstrap config the Machine references.
func (b *CAPIMachineBuilder) Bootstrap(apiGroup, kind, name string) *CAPIMachineBuilder {
	b.obj.Spec.Bootstrap.ConfigRef = clusterv1.ContractVersionedObjectReference{APIGroup: apiGroup, Kind: kind, Name: name}
	return b
}

// Infrastructure sets the infrastructure machine the Machine references.
func (b *CAPIMachineBuilder) Infrastructure(apiGroup, kind, name string) *CAPIMachineBuilder {
	b.obj.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: apiGroup, Kind: kind, Name: name}
	return b
}

// ProviderID sets spec.providerID.
func (b *CAPIMachineBuilder) ProviderID(id string) *CAPIMachineBuilder {
	b.obj.Spec.ProviderID = id
	return b
}

// InfrastructureProvisioned sets status.initialization.infrastructureProvisioned,
// as the Machine controller does once its infrastructure machine is.
func (b *CAPIMachineBuilder) InfrastructureProvisioned() *CAPIMachineBuilder {
	b.obj.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	return b
}

// Address adds an address to the status, as the Machine controller copies
// it from the infrastructure machine.
func (b *CAPIMachineBuilder) Address(typ clusterv1.MachineAddressType, address string) *CAPIMachineBuilder {
	b.obj.Status.Addresses = append(b.obj.Status.Addresses, clusterv1.MachineAddress{Type: typ, Address: address})
	return b
}

// Build returns the Machine.
func (b *CAPIMachineBuilder) Build() *clusterv1.Machine {
	return b.obj.DeepCopy()
}
