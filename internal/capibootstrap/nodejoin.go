package capibootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/workload"
)

// Event reasons of a Pull Machine's join.
const (
	EventReasonTokenRefreshFailed = "BootstrapTokenRefreshFailed"
	EventReasonProviderIDSet      = "ProviderIDSet"
	ActionJoin                    = "Join"
)

// joinPoll is how often a Pull Machine that has not joined is looked at:
// for its Node (whose provider ID the operator sets) and its nodeRef.
const joinPoll = 10 * time.Second

// CloudbaseInitLog is where cloudbase-init logs on a Windows host (its
// default logdir and logfile, cloudbase-init.conf): it holds what the
// bootstrap data printed, the join's errors among it.
const CloudbaseInitLog = `C:\Program Files\Cloudbase Solutions\Cloudbase-Init\log\cloudbase-init.log`

// followJoin follows a Pull Machine whose data is written until Cluster
// API gives it a nodeRef, as Cluster API's kubeadm bootstrap provider
// follows its Machines: the bootstrap token's expiration moved on while
// the Machine has no nodeRef, the token deleted once it has one (no
// credential outlives its need), condition NodeJoined saying where it
// stands. Cluster API sets the nodeRef by matching the Node's
// spec.providerID with the Machine's; a Pull host's kubelet does not know
// its provider ID (it is the infrastructure's, known after the data was
// written), so the operator sets it on the Node named after the Machine,
// as a cloud controller manager does, where the Node has none. A Machine
// reporting an address another host of its cluster keeps is told so
// (conflict.go) instead.
func (r *Reconciler) followJoin(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, wc *workload.Cluster) (reconcile.Result, error) {
	if machine.Status.NodeRef.IsDefined() {
		if tok := cfg.Status.BootstrapToken; tok != nil {
			if err := bootstrap.RevokeInstanceToken(ctx, wc.Kube, tokenOwner(cfg), tok.ID); err != nil {
				return reconcile.Result{}, err
			}
			cfg.Status.BootstrapToken = nil
		}
		setJoined(cfg, metav1.ConditionTrue, bootstrapv1.ReasonNodeJoined, fmt.Sprintf(
			"Machine %s has nodeRef Node %s in the workload cluster of Cluster %s; its bootstrap token is deleted", machine.Name, machine.Status.NodeRef.Name, wc.Ref))
		return reconcile.Result{}, nil
	}
	conflict, err := r.checkAddressConflict(ctx, cfg, machine, wc)
	if err != nil {
		return reconcile.Result{}, err
	}
	// The token lives on through a conflict: once it is resolved, the
	// host's pending CSRs are approved.
	r.refreshToken(ctx, cfg, wc)
	if conflict {
		return reconcile.Result{RequeueAfter: joinPoll}, nil
	}
	if err := r.setProviderID(ctx, cfg, machine, wc); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.waitForNode(cfg, machine)}, nil
}

// refreshToken moves the token's expiration on when it is due
// (bootstrap.RefreshToken); a failure is a Warning event, and the
// condition says so: the host needs a new Machine.
func (r *Reconciler) refreshToken(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, wc *workload.Cluster) {
	tok := cfg.Status.BootstrapToken
	if tok == nil {
		return
	}
	exp, err := bootstrap.RefreshToken(ctx, wc.Kube, tokenOwner(cfg), tok.ID, tok.Expires.Time, r.Pull.tokenTTL())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "refreshing the bootstrap token")
		r.event(cfg, true, EventReasonTokenRefreshFailed, ActionJoin, err.Error()+"; delete the Machine so that its MachineSet makes one with a new token")
		return
	}
	tok.Expires = metav1.NewTime(exp)
}

// waitForNode sets NodeJoined False while the Machine has no nodeRef,
// with reason NodeJoinTimedOut (and a Warning event) once the wait, from
// when the data was written, passed the join timeout; it returns when to
// look again.
func (r *Reconciler) waitForNode(cfg *bootstrapv1.WinnodeConfig, machine *clusterv1.Machine) time.Duration {
	c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined)
	if c == nil || c.Status != metav1.ConditionFalse {
		setJoined(cfg, metav1.ConditionFalse, bootstrapv1.ReasonWaitingForNode, fmt.Sprintf(
			"the bootstrap data is written; waiting for Machine %s's host to join and Cluster API to set its nodeRef", machine.Name))
		return joinPoll
	}
	waited := time.Since(c.LastTransitionTime.Time)
	if waited < r.Pull.joinTimeout() {
		return min(joinPoll, r.Pull.joinTimeout()-waited)
	}
	msg := fmt.Sprintf("Machine %s has no nodeRef %s after its bootstrap data was written: its host did not join by itself, and the operator never reaches a Pull host; "+
		"read the host's logs: %s (winnode-agent join) and %s (cloudbase-init, which ran the bootstrap data)",
		machine.Name, r.Pull.joinTimeout(), joinconfig.LogPath, CloudbaseInitLog)
	if setJoined(cfg, metav1.ConditionFalse, bootstrapv1.ReasonNodeJoinTimedOut, msg) {
		r.event(cfg, true, bootstrapv1.ReasonNodeJoinTimedOut, ActionJoin, msg)
	}
	return joinPoll
}

// setJoined sets condition NodeJoined, keeping its transition time while
// the status stays; it reports whether the reason or message changed.
func setJoined(cfg *bootstrapv1.WinnodeConfig, status metav1.ConditionStatus, reason, message string) bool {
	old := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != message
	meta.SetStatusCondition(&cfg.Status.Conditions, metav1.Condition{Type: bootstrapv1.ConditionNodeJoined, Status: status,
		Reason: reason, Message: message, ObservedGeneration: cfg.Generation})
	return changed
}

// setProviderID gives the Node named after cfg's computer name the
// Machine's spec.providerID, where the Node has none yet: the Node exists
// only through a client certificate winnode approved for that name
// (requested with the Machine's bootstrap token, csrapproval.PullMachine),
// and the provider ID is the infrastructure provider's, from the
// management cluster. The patch carries the Node's resourceVersion, so a
// Node that changed since it was read is left for the next look. A Node
// with another provider ID is left alone, with a Warning event.
func (r *Reconciler) setProviderID(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, wc *workload.Cluster) error {
	id := machine.Spec.ProviderID
	if id == "" || cfg.Status.ComputerName == "" {
		return nil
	}
	name := plan.NodeName(cfg.Status.ComputerName)
	node, err := wc.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Node %s in the workload cluster of Cluster %s: %w", name, wc.Ref, err)
	case node.Spec.ProviderID == id:
		return nil
	case node.Spec.ProviderID != "":
		r.event(cfg, true, EventReasonProviderIDSet, ActionJoin, fmt.Sprintf(
			"Node %s has provider ID %s, not Machine %s's %s: Cluster API will not link them; winnode leaves it alone", name, node.Spec.ProviderID, machine.Name, id))
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": node.ResourceVersion}, "spec": map[string]any{"providerID": id}})
	if err != nil {
		return err
	}
	_, err = wc.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting provider ID %s on Node %s in the workload cluster of Cluster %s: %w", id, name, wc.Ref, err)
	}
	r.event(cfg, false, EventReasonProviderIDSet, ActionJoin, fmt.Sprintf("Node %s joined; its spec.providerID is now Machine %s's, %s, by which Cluster API sets the Machine's nodeRef", name, machine.Name, id))
	return nil
}
