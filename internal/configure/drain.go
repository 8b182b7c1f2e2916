package configure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubectl/pkg/drain"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// The drain step: before services restart under running pods (an upgrade, a
// failed node configured again) and before a host is deconfigured, its Node
// is cordoned and its pods evicted as `kubectl drain` does. Cordons are
// winnode's own (annotation AnnotationCordoned), so that a node an
// administrator cordoned is never uncordoned by winnode.

// drainBeforeRestarts cordons the Node (unless an administrator already did)
// and evicts its pods before services restart under them (an upgrade, or a
// failed node configured again). It reports true once no pod is left, or
// false and a Result to call again; after DrainTimeout from the start of the
// configuration it goes on regardless, with an event.
func (c *Configurer) drainBeforeRestarts(ctx context.Context, inst *winnodev1.WindowsInstance, node *corev1.Node) (bool, Result, error) {
	if err := c.step(ctx, inst, StepDrain); err != nil {
		return false, Result{}, err
	}
	if err := c.cordonIfSchedulable(ctx, node); err != nil {
		return false, Result{}, stepErr(StepDrain, winnodev1.ReasonApplyFailed, err)
	}
	since := time.Now()
	if inst.Status.ConfigurationStarted != nil {
		since = inst.Status.ConfigurationStarted.Time
	}
	left, err := c.drain(ctx, inst, node.Name, since, "applying the new plan anyway")
	if err != nil {
		return false, Result{}, stepErr(StepDrain, winnodev1.ReasonApplyFailed, err)
	}
	if left > 0 {
		return false, Result{RequeueAfter: c.pollInterval()}, nil
	}
	return true, Result{}, nil
}

// drain evicts the pods of the Node that `kubectl drain --force
// --ignore-daemonsets --delete-emptydir-data` would, without waiting, and
// returns how many are still there. After DrainTimeout from since it gives
// up waiting (0 left), with an event saying what happens instead (then).
func (c *Configurer) drain(ctx context.Context, inst *winnodev1.WindowsInstance, node string, since time.Time, then string) (int, error) {
	h := &drain.Helper{
		Ctx:                 ctx,
		Client:              c.Kube,
		Force:               true,
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  true,
		GracePeriodSeconds:  -1,
		Out:                 io.Discard,
		ErrOut:              io.Discard,
	}
	list, errs := h.GetPodsForDeletion(node)
	if len(errs) > 0 {
		return 0, fmt.Errorf("draining Node %s: %w", node, errors.Join(errs...))
	}
	pods := list.Pods()
	if len(pods) == 0 {
		return 0, nil
	}
	if time.Since(since) > c.drainTimeout() {
		var names []string
		for _, p := range pods {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		c.event(inst, corev1.EventTypeWarning, winnodev1.ReasonDrainTimedOut, "pods still on Node %s after %s: %s; %s", node, c.drainTimeout(), strings.Join(names, ", "), then)
		return 0, nil
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		err := h.EvictPod(p, policyv1.SchemeGroupVersion)
		switch {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			// A PodDisruptionBudget says not now: try again later.
			c.Log.Info("eviction refused for now", "pod", p.Namespace+"/"+p.Name, "node", node)
		default:
			return 0, fmt.Errorf("evicting pod %s/%s from Node %s: %w", p.Namespace, p.Name, node, err)
		}
	}
	c.Log.Info("draining", "instance", inst.Name, "node", node, "pods", len(pods))
	return len(pods), nil
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
