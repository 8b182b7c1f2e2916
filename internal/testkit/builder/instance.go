package builder

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// InstanceBuilder builds a WindowsInstance.
type InstanceBuilder struct{ obj winnodev1.WindowsInstance }

// Instance starts a WindowsInstance named name.
func Instance(name string) *InstanceBuilder {
	return &InstanceBuilder{obj: winnodev1.WindowsInstance{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Host sets the address and user the operator connects with.
func (b *InstanceBuilder) Host(address, username string) *InstanceBuilder {
	b.obj.Spec.Address, b.obj.Spec.Username = address, username
	return b
}

// Port sets the SSH port.
func (b *InstanceBuilder) Port(port int32) *InstanceBuilder {
	b.obj.Spec.Port = port
	return b
}

// Manual marks the instance as made by hand (source kind Manual).
func (b *InstanceBuilder) Manual() *InstanceBuilder {
	return b.Source(winnodev1.SourceRef{Kind: winnodev1.SourceManual})
}

// Source sets what made the instance.
func (b *InstanceBuilder) Source(ref winnodev1.SourceRef) *InstanceBuilder {
	b.obj.Spec.Source = ref
	return b
}

// Labels adds labels.
func (b *InstanceBuilder) Labels(labels map[string]string) *InstanceBuilder {
	b.obj.Labels = merge(b.obj.Labels, labels)
	return b
}

// Generation sets metadata.generation.
func (b *InstanceBuilder) Generation(g int64) *InstanceBuilder {
	b.obj.Generation = g
	return b
}

// Created sets the creation time.
func (b *InstanceBuilder) Created(t time.Time) *InstanceBuilder {
	b.obj.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Phase sets status.phase.
func (b *InstanceBuilder) Phase(p winnodev1.Phase) *InstanceBuilder {
	b.obj.Status.Phase = p
	return b
}

// Step sets status.step.
func (b *InstanceBuilder) Step(step string) *InstanceBuilder {
	b.obj.Status.Step = step
	return b
}

// Node sets status.nodeName and status.nodeUID (uid may be empty).
func (b *InstanceBuilder) Node(name, uid string) *InstanceBuilder {
	b.obj.Status.NodeName, b.obj.Status.NodeUID = name, uid
	return b
}

// Reported sets what the host reported of itself: hostname, FQDN and
// addresses.
func (b *InstanceBuilder) Reported(hostname, fqdn string, addresses ...string) *InstanceBuilder {
	b.obj.Status.Hostname, b.obj.Status.FQDN, b.obj.Status.Addresses = hostname, fqdn, addresses
	return b
}

// BootstrapToken sets status.bootstrapTokenID.
func (b *InstanceBuilder) BootstrapToken(id string) *InstanceBuilder {
	b.obj.Status.BootstrapTokenID = id
	return b
}

// LastError sets status.lastError.
func (b *InstanceBuilder) LastError(msg string) *InstanceBuilder {
	b.obj.Status.LastError = msg
	return b
}

// Version sets status.version.
func (b *InstanceBuilder) Version(v string) *InstanceBuilder {
	b.obj.Status.Version = v
	return b
}

// PinnedHostKey sets status.hostKey, the host key pinned at first
// contact (authorized_keys format).
func (b *InstanceBuilder) PinnedHostKey(key string) *InstanceBuilder {
	b.obj.Status.HostKey = key
	return b
}

// KeyFingerprint sets status.keyFingerprint, the operator key the host
// accepted.
func (b *InstanceBuilder) KeyFingerprint(fp string) *InstanceBuilder {
	b.obj.Status.KeyFingerprint = fp
	return b
}

// Conditions sets status.conditions.
func (b *InstanceBuilder) Conditions(conds ...metav1.Condition) *InstanceBuilder {
	b.obj.Status.Conditions = conds
	return b
}

// NameFixed sets status.nodeNameFixedAt: the node name was fixed then,
// before the first join credential.
func (b *InstanceBuilder) NameFixed(t time.Time) *InstanceBuilder {
	at := metav1.NewTime(t)
	b.obj.Status.NodeNameFixedAt = &at
	return b
}

// ClientCertificate sets the CSR approver's record of the client
// certificate it approved for node (nodeExisted: a Node of that name
// existed then).
func (b *InstanceBuilder) ClientCertificate(csr, node string, nodeExisted bool) *InstanceBuilder {
	b.obj.Status.ClientCertificate = &winnodev1.ClientCertificate{CSRName: csr, CSRUID: csr + "-uid", NodeName: node, NodeExisted: nodeExisted}
	return b
}

// Deleting sets metadata.deletionTimestamp.
func (b *InstanceBuilder) Deleting() *InstanceBuilder {
	now := metav1.Now()
	b.obj.DeletionTimestamp = &now
	return b
}

// Build returns the WindowsInstance.
func (b *InstanceBuilder) Build() *winnodev1.WindowsInstance {
	return b.obj.DeepCopy()
}

// merge returns to with from's entries added.
func merge(to, from map[string]string) map[string]string {
	if to == nil && from != nil {
		to = make(map[string]string, len(from))
	}
	for k, v := range from {
		to[k] = v
	}
	return to
}
