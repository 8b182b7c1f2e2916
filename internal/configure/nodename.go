package configure

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/identity"
	"github.com/winnode/winnode/internal/plan"
)

// This file decides which node name and which Node are this instance's.
// The node name is the hostname the host reports, lower-cased (or the
// computer name winnode assigned it, spec.nodeName): only the host's word.
// A cloned VM, a lying host or a man in the middle of a first contact can
// report the name of a Node that already exists — another winnode host's,
// a Linux node's, a control-plane node's — which winnode would then
// cordon, drain, label and, on removal, delete. So:
//
//   - the name is fixed once, just before the first join credential is
//     issued (status.nodeNameFixedAt); a host that reports another name
//     later gets NodeNameChanged, and no new credential (fixNodeName,
//     checkReportedName);
//   - a name that is not a DNS label, or is a name of the API server's
//     serving certificate, is refused before anything is configured
//     (NodeNameNotAllowed: identity.CheckNodeName);
//   - no other instance may claim the name (identity.NodeNameOwner: the
//     one with the strongest claim keeps it, a failed one without
//     credentials keeps none);
//   - a Node is this instance's only by its UID, recorded in
//     status.nodeUID, and a UID is recorded only with proof: the CSR
//     approver approved this instance's client certificate for that name
//     while no Node of that name existed (status.clientCertificate), so the
//     Node can only have been created by the holder of that certificate —
//     this host's kubelet — or by a cluster administrator. A Node created
//     after the credential was issued is not proof of anything;
//   - an instance that was Ready before node names were fixed (winnode
//     releases that recorded no nodeNameFixedAt, no client certificate and
//     no node UID: status.joinedAt is its only record) adopts the Node of
//     its name, once, with an event: it acted on that Node by name already,
//     and from then on only on that UID. An instance configured by this
//     release always has a fixed name, so the rule never applies to it.
//
// Anything else is a NodeNameConflict: condition, Warning event, phase
// Failed (retried), and the Node is left untouched.

// errNodeNameConflict marks a refused node name.
var errNodeNameConflict = errors.New("node name conflict")

// conflictHint tells an administrator what to do about a conflict.
const conflictHint = "winnode leaves that Node untouched and configures nothing more on this host. " +
	"If the host is a clone, give it its own hostname (Rename-Computer) and reboot it; " +
	"if the Node is left over from a host that is gone, delete that Node; the instance is retried"

// nameFixed reports whether the instance's node name can no longer
// change: a credential was issued for it, or its Node is known.
func nameFixed(inst *winnodev1.WindowsInstance) bool {
	return inst.Status.NodeNameFixedAt != nil || inst.Status.NodeUID != "" || inst.Status.ClientCertificate != nil
}

// checkReportedName records the node name the host reports (hostname),
// unless the name is fixed already, or winnode assigned it (spec.nodeName):
// a host reporting another name then gets NodeNameChanged, and the step
// fails before anything is issued or installed.
func (c *Configurer) checkReportedName(inst *winnodev1.WindowsInstance, hostname string) error {
	reported := plan.NodeName(hostname)
	want := ""
	switch {
	case inst.Spec.NodeName != "":
		want = strings.ToLower(inst.Spec.NodeName)
	case nameFixed(inst):
		want = inst.Status.NodeName
	}
	if want == "" || reported == want {
		inst.Status.NodeName = reported
		meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionNodeNameChanged)
		return nil
	}
	inst.Status.NodeName = want
	msg := fmt.Sprintf("host %s reports the hostname %s, but its node name is %s, fixed before its first join credential; "+
		"winnode issues it no credential and approves no certificate for %s. Give the host back its name (Rename-Computer %s), "+
		"or delete the instance and add the host again", inst.Spec.Address, hostname, want, reported, want)
	SetCondition(inst, winnodev1.ConditionNodeNameChanged, metav1.ConditionTrue, winnodev1.ReasonNodeNameChanged, msg)
	c.event(inst, corev1.EventTypeWarning, winnodev1.ReasonNodeNameChanged, "%s", msg)
	return stepErr(StepInfo, winnodev1.ReasonNodeNameChanged, errors.New(msg))
}

// fixNodeName fixes the node name before the first join credential is
// issued, and persists it: from now on it is this instance's, against a
// newcomer reporting it and against the host renaming itself.
func (c *Configurer) fixNodeName(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	if inst.Status.NodeNameFixedAt != nil {
		return nil
	}
	now := metav1.Now()
	inst.Status.NodeNameFixedAt = &now
	return c.save(ctx, inst)
}

// getNode returns the instance's Node (nil when it does not exist or the
// node name is not known yet), or a NodeNameConflict (or
// NodeNameNotAllowed) error when the name or the Node of that name is not
// this instance's.
func (c *Configurer) getNode(ctx context.Context, inst *winnodev1.WindowsInstance) (*corev1.Node, error) {
	name := nodeName(inst)
	if name == "" {
		return nil, nil
	}
	if err := c.nameAllowed(ctx, inst, name); err != nil {
		return nil, err
	}
	node, err := FindNode(ctx, c.Kube, name, "")
	if err != nil || node == nil {
		meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionNodeNameConflict)
		return nil, err
	}
	if !c.isOurNode(inst, node) {
		return nil, c.nodeNameConflict(inst, fmt.Sprintf("host %s reports the hostname %s, but Node %s (uid %s) was not registered by this instance's host; %s",
			inst.Spec.Address, name, node.Name, node.UID, conflictHint))
	}
	meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionNodeNameConflict)
	return node, nil
}

// nameAllowed checks the name itself (identity.CheckNodeName) and that no
// other instance claims it.
func (c *Configurer) nameAllowed(ctx context.Context, inst *winnodev1.WindowsInstance, name string) error {
	apiNames, err := c.apiServerNames(ctx)
	if err != nil {
		return fmt.Errorf("checking node name %s of WindowsInstance %s: %w", name, inst.Name, err)
	}
	if err := identity.CheckNodeName(name, identity.NameFacts{APIServerNames: apiNames}); err != nil {
		msg := fmt.Sprintf("host %s: %v; winnode configures nothing on it. Give the host another name (Rename-Computer) and reboot it; the instance is retried", inst.Spec.Address, err)
		SetCondition(inst, winnodev1.ConditionNodeNameConflict, metav1.ConditionTrue, winnodev1.ReasonNodeNameNotAllowed, msg)
		c.event(inst, corev1.EventTypeWarning, winnodev1.ReasonNodeNameNotAllowed, "%s", msg)
		return stepErr(orString(inst.Status.Step, StepInfo), winnodev1.ReasonNodeNameNotAllowed, fmt.Errorf("%w: %s", errNodeNameConflict, msg))
	}
	others, err := c.peers(ctx, identity.NodeNameKey(inst.Spec.Cluster, identity.NodeNameOf(inst)))
	if err != nil {
		return fmt.Errorf("looking for other WindowsInstances named %s: %w", name, err)
	}
	if owner := identity.NodeNameOwner(inst, others); owner != "" {
		return c.nodeNameConflict(inst, fmt.Sprintf("host %s reports the hostname %s, which is already the node name of WindowsInstance %s; %s",
			inst.Spec.Address, name, owner, conflictHint))
	}
	return nil
}

// isOurNode applies the rules above, recording the Node's UID when it is
// this instance's from now on.
func (c *Configurer) isOurNode(inst *winnodev1.WindowsInstance, node *corev1.Node) bool {
	uid := string(node.UID)
	if inst.Status.NodeUID != "" {
		return inst.Status.NodeUID == uid
	}
	switch cert := inst.Status.ClientCertificate; {
	case cert != nil && cert.NodeName == node.Name && !cert.NodeExisted:
		c.event(inst, corev1.EventTypeNormal, "NodeRegistered", "Node %s (uid %s) registered by host %s, whose client certificate (CSR %s) was approved while no Node %s existed",
			node.Name, uid, inst.Spec.Address, cert.CSRName, node.Name)
	case readyBeforeNamesWereFixed(inst):
		c.event(inst, corev1.EventTypeNormal, "NodeAdopted", "Node %s (uid %s), configured before node names were fixed, is this instance's from now on", node.Name, uid)
	default:
		return false
	}
	inst.Status.NodeUID = uid
	return true
}

// readyBeforeNamesWereFixed: the instance was Ready under a winnode
// release that recorded none of nodeNameFixedAt, clientCertificate and
// nodeUID (see above).
func readyBeforeNamesWereFixed(inst *winnodev1.WindowsInstance) bool {
	return inst.Status.JoinedAt != nil && !nameFixed(inst)
}

// nodeNameConflict records a refused node name and returns the step error.
func (c *Configurer) nodeNameConflict(inst *winnodev1.WindowsInstance, msg string) error {
	SetCondition(inst, winnodev1.ConditionNodeNameConflict, metav1.ConditionTrue, winnodev1.ReasonNodeNameConflict, msg)
	return stepErr(orString(inst.Status.Step, StepInfo), winnodev1.ReasonNodeNameConflict, fmt.Errorf("%w: %s", errNodeNameConflict, msg))
}

// instances lists the other WindowsInstances the conflict checks compare
// with (none without Configurer.Instances).
func (c *Configurer) instances(ctx context.Context) ([]winnodev1.WindowsInstance, error) {
	if c.Instances == nil {
		return nil, nil
	}
	return c.Instances(ctx)
}

// peers lists the instances filed under any of keys (Configurer.Peers),
// or, without an index, every instance (the checks filter them).
func (c *Configurer) peers(ctx context.Context, keys ...string) ([]winnodev1.WindowsInstance, error) {
	if c.Peers == nil {
		return c.instances(ctx)
	}
	return c.Peers(ctx, keys)
}

// apiServerNames are the names of the API server's serving certificate
// (none without Configurer.APIServerNames).
func (c *Configurer) apiServerNames(ctx context.Context) ([]string, error) {
	if c.APIServerNames == nil {
		return nil, nil
	}
	return c.APIServerNames(ctx)
}
