package configure

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// This file decides which Node is this instance's. The node name is only
// the hostname the host reports (status.nodeName): a cloned VM, a lying
// host or a man in the middle of a first contact can report the name of a
// Node that already exists — another winnode host's, or a control-plane
// node's — which winnode would then cordon, drain, label and, on removal,
// delete. So a Node is this instance's only when its UID is the one
// recorded in status.nodeUID, and a UID is recorded only for a Node that
// this instance's host registered:
//
//   - the Node appeared after this instance issued join credentials (its
//     creation is not before the bootstrap token's or the join
//     ServiceAccount's), and no Node of that
//     name existed before: one existing already is refused at the first
//     step that reads it (learn, before any credentials are issued). Only
//     holders of system:node:<name> credentials (a kubelet whose client
//     certificate the CSR approver tied to this instance's token) or a
//     cluster administrator can create a Node of that name after that;
//   - an instance configured before node UIDs were recorded (no nodeUID,
//     and its Node was Ready under it once: status.joinedAt) adopts the
//     Node of its name, once, with an event: it acted on that Node by name
//     already, and from then on only on that UID;
//   - no other instance claims the name (Configurer.NodeNameOwner): of two
//     instances reporting the same name, the one with a recorded UID, else
//     the older one, keeps it.
//
// Anything else is a NodeNameConflict: condition, Warning event, phase
// Failed (retried), and the Node is left untouched.

// errNodeNameConflict marks a refused node name.
var errNodeNameConflict = errors.New("node name conflict")

// conflictHint tells an administrator what to do about a conflict.
const conflictHint = "winnode leaves that Node untouched and configures nothing more on this host. " +
	"If the host is a clone, give it its own hostname (Rename-Computer) and reboot it; " +
	"if the Node is left over from a host that is gone, delete that Node; the instance is retried"

// getNode returns the instance's Node (nil when it does not exist or the
// node name is not known yet), or a NodeNameConflict error when a Node of
// that name is not this instance's.
func (c *Configurer) getNode(ctx context.Context, inst *winnodev1.WindowsInstance) (*corev1.Node, error) {
	name := nodeName(inst)
	if name == "" {
		return nil, nil
	}
	if c.NodeNameOwner != nil {
		owner, err := c.NodeNameOwner(ctx, inst)
		if err != nil {
			return nil, fmt.Errorf("looking for other WindowsInstances named %s: %w", name, err)
		}
		if owner != "" {
			return nil, c.nodeNameConflict(inst, fmt.Sprintf("host %s reports the hostname %s, which is already the node name of WindowsInstance %s; %s",
				inst.Spec.Address, name, owner, conflictHint))
		}
	}
	node, err := FindNode(ctx, c.Kube, name, "")
	if err != nil || node == nil {
		meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionNodeNameConflict)
		return nil, err
	}
	ours, err := c.isOurNode(ctx, inst, node)
	if err != nil {
		return nil, err
	}
	if !ours {
		return nil, c.nodeNameConflict(inst, fmt.Sprintf("host %s reports the hostname %s, but Node %s (uid %s) was not registered by this instance's host; %s",
			inst.Spec.Address, name, node.Name, node.UID, conflictHint))
	}
	meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionNodeNameConflict)
	return node, nil
}

// isOurNode applies the rules above, recording the Node's UID when it is
// this instance's from now on.
func (c *Configurer) isOurNode(ctx context.Context, inst *winnodev1.WindowsInstance, node *corev1.Node) (bool, error) {
	uid := string(node.UID)
	if inst.Status.NodeUID == uid {
		return true, nil
	}
	registered, err := c.registeredWithOurCredentials(ctx, inst, node)
	if err != nil {
		return false, err
	}
	switch {
	case registered:
		c.event(inst, corev1.EventTypeNormal, "NodeRegistered", "Node %s (uid %s) registered by host %s", node.Name, uid, inst.Spec.Address)
	case inst.Status.NodeUID == "" && inst.Status.JoinedAt != nil:
		c.event(inst, corev1.EventTypeNormal, "NodeAdopted", "Node %s (uid %s), configured before node UIDs were recorded, is this instance's from now on", node.Name, uid)
	default:
		return false, nil
	}
	inst.Status.NodeUID = uid
	return true, nil
}

// registeredWithOurCredentials reports whether the Node was created once
// this instance's join credential existed: its bootstrap token's Secret or
// its join ServiceAccount (each is revoked only after the Node's UID is
// recorded, so it is there while the Node is awaited).
func (c *Configurer) registeredWithOurCredentials(ctx context.Context, inst *winnodev1.WindowsInstance, node *corev1.Node) (bool, error) {
	var (
		issued metav1.Object
		err    error
	)
	switch {
	case inst.Status.BootstrapTokenID != "":
		issued, err = c.Kube.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstraputil.BootstrapTokenSecretName(inst.Status.BootstrapTokenID), metav1.GetOptions{})
	case inst.Status.JoinServiceAccount != "":
		issued, err = c.Kube.CoreV1().ServiceAccounts(c.JoinNamespace).Get(ctx, inst.Status.JoinServiceAccount, metav1.GetOptions{})
	default:
		return false, nil
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the join credential of WindowsInstance %s: %w", inst.Name, err)
	}
	created := issued.GetCreationTimestamp()
	return !node.CreationTimestamp.Before(&created), nil
}

// nodeNameConflict records a refused node name and returns the step error.
func (c *Configurer) nodeNameConflict(inst *winnodev1.WindowsInstance, msg string) error {
	SetCondition(inst, winnodev1.ConditionNodeNameConflict, metav1.ConditionTrue, winnodev1.ReasonNodeNameConflict, msg)
	return stepErr(orString(inst.Status.Step, StepInfo), winnodev1.ReasonNodeNameConflict, fmt.Errorf("%w: %s", errNodeNameConflict, msg))
}

// NodeNameOwner names the instance among others that keeps inst's node
// name instead of inst, or "": of two instances reporting the same
// hostname, the one that recorded its Node's UID keeps it, else the older
// one (then the one first by name). The operator lists its instances and
// passes them (Configurer.NodeNameOwner).
func NodeNameOwner(inst *winnodev1.WindowsInstance, others []winnodev1.WindowsInstance) string {
	name := nodeName(inst)
	if name == "" {
		return ""
	}
	for i := range others {
		o := &others[i]
		if o.Name == inst.Name || nodeName(o) != name || !o.DeletionTimestamp.IsZero() && o.Status.NodeUID == "" {
			continue
		}
		if keeps(o, inst) {
			return o.Name
		}
	}
	return ""
}

// keeps reports whether a keeps a node name that b reports too.
func keeps(a, b *winnodev1.WindowsInstance) bool {
	if (a.Status.NodeUID != "") != (b.Status.NodeUID != "") {
		return a.Status.NodeUID != ""
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
