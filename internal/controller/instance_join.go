package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// getNode returns the instance's Node, or nil when it does not exist (or the
// node name is not known yet).
func (c *Configurer) getNode(ctx context.Context, inst *winnodev1.WindowsInstance) (*corev1.Node, error) {
	name := nodeName(inst)
	if name == "" {
		return nil, nil
	}
	node, err := c.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Node %s: %w", name, err)
	}
	return node, nil
}

func nodeReady(node *corev1.Node) bool {
	if node == nil {
		return false
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// join waits (by asking to be called again) for the host's kubelet to
// register its Node; its client certificate is approved meanwhile by the
// operator's CSR approver (or, without the operator, by winnodectl). A new
// Node is cordoned until the configuration finishes.
func (c *Configurer) join(ctx context.Context, inst *winnodev1.WindowsInstance) (Result, error) {
	if err := c.step(ctx, inst, StepJoin); err != nil {
		return Result{}, err
	}
	node, err := c.getNode(ctx, inst)
	if err != nil {
		return Result{}, stepErr(StepJoin, winnodev1.ReasonWaitingForNode, err)
	}
	if node == nil {
		if err := c.joinDeadline(inst, "register"); err != nil {
			return Result{}, err
		}
		setCondition(inst, winnodev1.ConditionNodeReady, metav1.ConditionFalse, winnodev1.ReasonWaitingForNode,
			fmt.Sprintf("waiting for the kubelet on %s to register Node %s", inst.Spec.Address, nodeName(inst)))
		return Result{RequeueAfter: c.pollInterval()}, c.save(ctx, inst)
	}
	if !nodeReady(node) && !node.Spec.Unschedulable {
		if err := c.cordon(ctx, node.Name, true); err != nil {
			return Result{}, stepErr(StepJoin, winnodev1.ReasonWaitingForNode, err)
		}
	}
	return c.finish(ctx, inst)
}

// joinDeadline fails the configuration when the Node has taken longer than
// JoinTimeout since the configuration started.
func (c *Configurer) joinDeadline(inst *winnodev1.WindowsInstance, what string) error {
	started := inst.Status.ConfigurationStarted
	if started == nil || time.Since(started.Time) < c.joinTimeout() {
		return nil
	}
	err := fmt.Errorf("the kubelet on %s did not %s Node %s within %s: look at its log (C:\\var\\log\\kubelet\\kubelet.log) and at pending CertificateSigningRequests; the configuration is retried",
		inst.Spec.Address, what, nodeName(inst), c.joinTimeout())
	setCondition(inst, winnodev1.ConditionNodeReady, metav1.ConditionFalse, winnodev1.ReasonNodeNotReady, err.Error())
	// Retry from the start (the host steps again: a fresh token if the old
	// one ran out, services started again), with a fresh clock.
	inst.Status.ConfigurationStarted = nil
	inst.Status.Step = ""
	return stepErr(StepJoin, winnodev1.ReasonNodeNotReady, err)
}

// cordonIfSchedulable cordons a Node as winnode's (AnnotationCordoned, lifted
// when the node is Ready again). A Node an administrator cordoned is left
// as it is, so that winnode never uncordons it.
func (c *Configurer) cordonIfSchedulable(ctx context.Context, node *corev1.Node) error {
	if node.Spec.Unschedulable {
		return nil
	}
	return c.cordon(ctx, node.Name, true)
}

// cordon marks the Node unschedulable (or schedulable again), noting with
// an annotation that winnode did it, so that only winnode's cordon is
// lifted.
func (c *Configurer) cordon(ctx context.Context, name string, on bool) error {
	var ann any // nil deletes the annotation
	if on {
		ann = "true"
	}
	patch := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{AnnotationCordoned: ann}},
		"spec":     map[string]any{"unschedulable": on},
	}
	data, _ := json.Marshal(patch)
	_, err := c.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		what := "uncordoning"
		if on {
			what = "cordoning"
		}
		return fmt.Errorf("%s Node %s: %w", what, name, err)
	}
	return nil
}
