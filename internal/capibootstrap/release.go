package capibootstrap

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/workload"
)

// TokenFinalizer holds a Pull config's deletion until its bootstrap token
// is deleted from the workload cluster. A Machine deleted before its host
// joined (scaled down, replaced by a health check, a rollout) would
// otherwise leave a join credential there until it expires (the provider's
// TTL, refreshed while the Machine waited): Cluster API's Machine
// controller deletes the Machine's bootstrap config and waits for it to be
// gone, so the credential goes with the Machine.
const TokenFinalizer = "bootstrap.winnode.io/bootstrap-token"

// Events of a deleted config: its token, and its unlinked Node.
const (
	EventReasonTokenDeleted        = "BootstrapTokenDeleted"
	EventReasonUnlinkedNodeDeleted = "UnlinkedNodeDeleted"
)

// holdToken adds TokenFinalizer to cfg (and *orig) before its token
// exists, patching the metadata only: cfg's status changes of this
// reconcile are kept for the status patch.
func (r *Reconciler) holdToken(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, orig **bootstrapv1.WinnodeConfig) error {
	if controllerutil.ContainsFinalizer(cfg, TokenFinalizer) {
		return nil
	}
	obj := (*orig).DeepCopy()
	base := obj.DeepCopy()
	controllerutil.AddFinalizer(obj, TokenFinalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer %s to WinnodeConfig %s/%s: %w", TokenFinalizer, cfg.Namespace, cfg.Name, err)
	}
	cfg.Finalizers, cfg.ResourceVersion = obj.Finalizers, obj.ResourceVersion
	*orig = obj
	return nil
}

// release runs when cfg is being deleted: its bootstrap token, if the
// status names one, is deleted from the workload cluster, and so is the
// Node of its computer name if its Machine never had a nodeRef (a host
// that registered and was deleted before Cluster API linked it: Cluster
// API deletes only the Nodes it linked), then TokenFinalizer is removed. Where the workload cluster cannot be used any
// more (its Cluster or kubeconfig gone, its API server unreachable), the
// token is left to expire within its TTL, with a Warning event: nothing
// else can delete it, and holding the Machine's deletion would not help.
func (r *Reconciler) release(ctx context.Context, cfg *bootstrapv1.WinnodeConfig) error {
	if !controllerutil.ContainsFinalizer(cfg, TokenFinalizer) {
		return nil
	}
	if tok := cfg.Status.BootstrapToken; tok != nil {
		wc, why, err := r.tokenCluster(ctx, cfg)
		if err != nil {
			return err
		}
		if wc == nil {
			r.event(cfg, true, EventReasonTokenDeleted, ActionDelete, fmt.Sprintf(
				"bootstrap token %s left to expire at %s: %s", tok.ID, tok.Expires.UTC().Format("2006-01-02T15:04:05Z"), why))
		} else {
			if err := bootstrap.RevokeInstanceToken(ctx, wc.Kube, tokenOwner(cfg), tok.ID); err != nil {
				return fmt.Errorf("WinnodeConfig %s/%s is being deleted, in the workload cluster of Cluster %s: %w", cfg.Namespace, cfg.Name, wc.Ref, err)
			}
			if err := r.deleteUnlinkedNode(ctx, cfg, wc); err != nil {
				return err
			}
			r.event(cfg, false, EventReasonTokenDeleted, ActionDelete, fmt.Sprintf(
				"bootstrap token %s deleted from the workload cluster of Cluster %s: the WinnodeConfig is being deleted", tok.ID, wc.Ref))
		}
	}
	base := cfg.DeepCopy()
	controllerutil.RemoveFinalizer(cfg, TokenFinalizer)
	if err := r.Client.Patch(ctx, cfg, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer %s from WinnodeConfig %s/%s: %w", TokenFinalizer, cfg.Namespace, cfg.Name, err)
	}
	return nil
}

// deleteUnlinkedNode deletes the Node named after cfg's computer name in
// the workload cluster, where its host registered it before its Machine
// was deleted and got no nodeRef (NodeJoined not True): the name is the
// one winnode gave this config alone, and the Node could only be
// registered with this config's token (csrapproval.PullMachine).
func (r *Reconciler) deleteUnlinkedNode(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, wc *workload.Cluster) error {
	if cfg.Status.ComputerName == "" || meta.IsStatusConditionTrue(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined) {
		return nil
	}
	name := plan.NodeName(cfg.Status.ComputerName)
	err := wc.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("WinnodeConfig %s/%s is being deleted: deleting its unlinked Node %s in the workload cluster of Cluster %s: %w", cfg.Namespace, cfg.Name, name, wc.Ref, err)
	}
	r.event(cfg, false, EventReasonUnlinkedNodeDeleted, ActionDelete, fmt.Sprintf(
		"Node %s deleted from the workload cluster of Cluster %s: its host registered it, and its Machine was deleted before Cluster API linked them", name, wc.Ref))
	return nil
}

// ActionDelete is the action of the events about a deleted config.
const ActionDelete = "Delete"

// tokenCluster is the workload cluster cfg's token lives in: its Machine's
// Cluster, or, when the Machine is gone already, the Cluster its
// cluster-name label names (Cluster API labels the configs it clones). A
// nil cluster comes with why it cannot be used.
func (r *Reconciler) tokenCluster(ctx context.Context, cfg *bootstrapv1.WinnodeConfig) (*workload.Cluster, string, error) {
	name := cfg.Labels[clusterv1.ClusterNameLabel]
	if m := owningMachineName(cfg); m != "" {
		var machine clusterv1.Machine
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: m}, &machine)
		switch {
		case err == nil:
			name = machine.Spec.ClusterName
		case !apierrors.IsNotFound(err):
			return nil, "", fmt.Errorf("reading Machine %s/%s: %w", cfg.Namespace, m, err)
		}
	}
	if name == "" {
		return nil, "neither its Machine nor its label " + clusterv1.ClusterNameLabel + " names its Cluster", nil
	}
	wc, err := r.Workloads.Get(ctx, winnodev1.ClusterRef{Namespace: cfg.Namespace, Name: name})
	var we *workload.Error
	if errors.As(err, &we) {
		ctrl.LoggerFrom(ctx).Info("the token's workload cluster cannot be used", "reason", we.Reason)
		return nil, we.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	return wc, "", nil
}
