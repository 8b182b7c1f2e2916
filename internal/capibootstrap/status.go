package capibootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
)

// Event reasons and actions of the bootstrap provider (events.k8s.io/v1).
const (
	EventReasonInvalidSpec       = bootstrapv1.ReasonInvalidSpec
	EventReasonDataSecretCreated = "DataSecretCreated"
	EventReasonNotWritten        = bootstrapv1.ReasonDataSecretNotWritten
	ActionValidate               = "Validate"
	ActionCreate                 = "Create"
)

// setReady sets the Ready condition and reports whether its reason or
// message changed (the caller writes an event only then).
func setReady(cfg *bootstrapv1.WinnodeConfig, ready bool, reason, message string) bool {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	old := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionReady)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != message
	meta.SetStatusCondition(&cfg.Status.Conditions, metav1.Condition{
		Type: bootstrapv1.ConditionReady, Status: status, Reason: reason, Message: message,
		ObservedGeneration: cfg.Generation,
	})
	return changed
}

// setPaused sets the Paused condition the contract recommends.
func setPaused(cfg *bootstrapv1.WinnodeConfig, isPaused bool, message string) {
	c := metav1.Condition{Type: bootstrapv1.ConditionPaused, Status: metav1.ConditionFalse, Reason: bootstrapv1.ReasonNotPaused, ObservedGeneration: cfg.Generation}
	if isPaused {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, bootstrapv1.ReasonPaused, message
	}
	meta.SetStatusCondition(&cfg.Status.Conditions, c)
}

// setCreated records the written Secret as the contract says.
func setCreated(cfg *bootstrapv1.WinnodeConfig) bool {
	cfg.Status.DataSecretName = cfg.Name
	cfg.Status.Initialization.DataSecretCreated = ptr.To(true)
	if ModeOfConfig(cfg) == bootstrapv1.ModePull {
		return setReady(cfg, true, bootstrapv1.ReasonDataSecretAvailable, fmt.Sprintf(
			"Secret %s holds the bootstrap data (Pull mode): computer name %s; the host joins its workload cluster by itself", cfg.Name, cfg.Status.ComputerName))
	}
	return setReady(cfg, true, bootstrapv1.ReasonDataSecretAvailable, fmt.Sprintf(
		"Secret %s holds the bootstrap data: computer name %s, SSH key %s", cfg.Name, cfg.Status.ComputerName, cfg.Status.KeyFingerprint))
}

// patchStatus writes cfg's status if it differs from orig's (a merge patch
// of the status subresource, from the state the reconcile started with).
func (r *Reconciler) patchStatus(ctx context.Context, orig, cfg *bootstrapv1.WinnodeConfig) error {
	cfg.Status.ObservedGeneration = cfg.Generation
	if equalStatus(orig, cfg) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, cfg, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing the status of WinnodeConfig %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	return nil
}

func equalStatus(a, b *bootstrapv1.WinnodeConfig) bool {
	return a.Status.DataSecretName == b.Status.DataSecretName &&
		a.Status.ComputerName == b.Status.ComputerName &&
		a.Status.KeyFingerprint == b.Status.KeyFingerprint &&
		a.Status.ObservedGeneration == b.Status.ObservedGeneration &&
		equality.Semantic.DeepEqual(a.Status.BootstrapToken, b.Status.BootstrapToken) &&
		ptr.Deref(a.Status.Initialization.DataSecretCreated, false) == ptr.Deref(b.Status.Initialization.DataSecretCreated, false) &&
		conditionsEqual(a.Status.Conditions, b.Status.Conditions)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		d := meta.FindStatusCondition(b, c.Type)
		if d == nil || d.Status != c.Status || d.Reason != c.Reason || d.Message != c.Message || d.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

// event writes an event about cfg (never with key material: messages hold
// field paths, names and fingerprints only).
func (r *Reconciler) event(cfg *bootstrapv1.WinnodeConfig, warning bool, reason, action, note string) {
	t := corev1.EventTypeNormal
	if warning {
		t = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(cfg, nil, t, reason, action, "%s", note)
}
