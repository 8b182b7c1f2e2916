package builder

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeBuilder builds a Node.
type NodeBuilder struct{ obj corev1.Node }

// Node starts a Node named name.
func Node(name string) *NodeBuilder {
	return &NodeBuilder{obj: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Labels adds labels.
func (b *NodeBuilder) Labels(labels map[string]string) *NodeBuilder {
	b.obj.Labels = merge(b.obj.Labels, labels)
	return b
}

// Annotations adds annotations.
func (b *NodeBuilder) Annotations(annotations map[string]string) *NodeBuilder {
	b.obj.Annotations = merge(b.obj.Annotations, annotations)
	return b
}

// Created sets the creation time.
func (b *NodeBuilder) Created(t time.Time) *NodeBuilder {
	b.obj.CreationTimestamp = metav1.NewTime(t)
	return b
}

// ProviderID sets spec.providerID.
func (b *NodeBuilder) ProviderID(id string) *NodeBuilder {
	b.obj.Spec.ProviderID = id
	return b
}

// PodCIDR sets spec.podCIDR.
func (b *NodeBuilder) PodCIDR(cidr string) *NodeBuilder {
	b.obj.Spec.PodCIDR = cidr
	return b
}

// Unschedulable cordons the Node.
func (b *NodeBuilder) Unschedulable() *NodeBuilder {
	b.obj.Spec.Unschedulable = true
	return b
}

// Ready sets the Ready condition's status, and nothing else of it.
func (b *NodeBuilder) Ready(status corev1.ConditionStatus) *NodeBuilder {
	return b.Condition(corev1.NodeCondition{Type: corev1.NodeReady, Status: status})
}

// Heartbeat sets the Ready condition as a kubelet posts it now: its
// status, reason, heartbeat and transition times (the node lifecycle
// controller reads the heartbeat).
func (b *NodeBuilder) Heartbeat(status corev1.ConditionStatus, reason string) *NodeBuilder {
	now := metav1.Now()
	return b.Condition(corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: reason,
		LastHeartbeatTime: now, LastTransitionTime: now})
}

// Condition adds a condition.
func (b *NodeBuilder) Condition(c corev1.NodeCondition) *NodeBuilder {
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, c)
	return b
}

// Address adds an address of the given type.
func (b *NodeBuilder) Address(typ corev1.NodeAddressType, address string) *NodeBuilder {
	b.obj.Status.Addresses = append(b.obj.Status.Addresses, corev1.NodeAddress{Type: typ, Address: address})
	return b
}

// Info sets status.nodeInfo's OS image and kubelet version.
func (b *NodeBuilder) Info(osImage, kubeletVersion string) *NodeBuilder {
	b.obj.Status.NodeInfo.OSImage, b.obj.Status.NodeInfo.KubeletVersion = osImage, kubeletVersion
	return b
}

// Build returns the Node.
func (b *NodeBuilder) Build() *corev1.Node {
	return b.obj.DeepCopy()
}
