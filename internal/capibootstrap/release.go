package capibootstrap

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
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

// EventReasonTokenDeleted is the event of a deleted config's token.
const EventReasonTokenDeleted = "BootstrapTokenDeleted"

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
// status names one, is deleted from the workload cluster, then
// TokenFinalizer is removed. Where the workload cluster cannot be used any
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
