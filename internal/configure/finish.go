package configure

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// finish waits (by asking to be called again) for the Node to be Ready,
// then labels and annotates it, lifts winnode's cordon, revokes the
// bootstrap token, and moves the instance to Ready.
func (c *Configurer) finish(ctx context.Context, inst *winnodev1.WindowsInstance) (Result, error) {
	if err := c.step(ctx, inst, StepFinish); err != nil {
		return Result{}, err
	}
	node, err := c.getNode(ctx, inst)
	if err != nil {
		return Result{}, stepErr(StepFinish, winnodev1.ReasonWaitingForNode, err)
	}
	if node == nil {
		// Deleted meanwhile: wait for the kubelet to register it again.
		return c.join(ctx, inst)
	}
	if !NodeReady(node) {
		if err := c.joinDeadline(inst, "make Ready"); err != nil {
			return Result{}, err
		}
		SetCondition(inst, winnodev1.ConditionNodeReady, metav1.ConditionFalse, winnodev1.ReasonNodeNotReady,
			fmt.Sprintf("Node %s is registered and not Ready yet", node.Name))
		return Result{RequeueAfter: c.pollInterval()}, c.save(ctx, inst)
	}
	if err := c.markNode(ctx, inst, node); err != nil {
		return Result{}, stepErr(StepFinish, winnodev1.ReasonNodeNotReady, err)
	}
	if err := c.revokeTokens(ctx, inst); err != nil {
		return Result{}, stepErr(StepFinish, winnodev1.ReasonCredentialsFailed, err)
	}
	soon := c.checkKubeletPort(ctx, inst, node)
	c.ready(inst, node)
	if started := inst.Status.ConfigurationStarted; started != nil && c.Configured != nil {
		c.Configured(time.Since(started.Time))
	}
	c.event(inst, corev1.EventTypeNormal, winnodev1.ReasonNodeReady, "Node %s is Ready with winnode %s", node.Name, c.Version)
	return Result{RequeueAfter: c.recheckAfter(soon)}, c.save(ctx, inst)
}

// recheckAfter is when a Ready instance is checked again: at the periodic
// check, or soon while its kubelet-port check waits for the kubelet's
// serving certificate (kubeletport.go).
func (c *Configurer) recheckAfter(soon bool) time.Duration {
	if soon {
		return c.pollInterval()
	}
	return c.resyncPeriod()
}

// ready records a configured, Ready host.
func (c *Configurer) ready(inst *winnodev1.WindowsInstance, node *corev1.Node) {
	SetCondition(inst, winnodev1.ConditionNodeReady, metav1.ConditionTrue, winnodev1.ReasonNodeReady, fmt.Sprintf("Node %s is Ready", node.Name))
	inst.Status.Version = c.Version
	inst.Status.LastError = ""
	inst.Status.Step = ""
	inst.Status.ObservedGeneration = inst.Generation
	if inst.Status.JoinedAt == nil {
		now := metav1.Now()
		inst.Status.JoinedAt = &now
	}
	c.setPhase(inst, winnodev1.PhaseReady)
}

// markNode sets what winnode puts on a configured Node: the worker role
// label, the version and pinned host key annotations, and no cordon of
// winnode's. It patches only what differs.
func (c *Configurer) markNode(ctx context.Context, inst *winnodev1.WindowsInstance, node *corev1.Node) error {
	labels := map[string]any{}
	annotations := map[string]any{}
	if v, ok := node.Labels[LabelWorker]; !ok || v != "" {
		labels[LabelWorker] = ""
	}
	if node.Annotations[winnodev1.AnnotationVersion] != c.Version {
		annotations[winnodev1.AnnotationVersion] = c.Version
	}
	if inst.Status.HostKey != "" && node.Annotations[winnodev1.AnnotationHostKey] != inst.Status.HostKey {
		annotations[winnodev1.AnnotationHostKey] = inst.Status.HostKey
	}
	patch := map[string]any{}
	if _, ours := node.Annotations[AnnotationCordoned]; ours {
		annotations[AnnotationCordoned] = nil
		patch["spec"] = map[string]any{"unschedulable": false}
	}
	md := map[string]any{}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	if len(md) > 0 {
		patch["metadata"] = md
	}
	if len(patch) == 0 {
		return nil
	}
	data, _ := json.Marshal(patch)
	if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling Node %s: %w", node.Name, err)
	}
	return nil
}
