package configure

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
)

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
		if err := c.refreshToken(ctx, inst); err != nil {
			return Result{}, err
		}
		SetCondition(inst, winnodev1.ConditionNodeReady, metav1.ConditionFalse, winnodev1.ReasonWaitingForNode,
			fmt.Sprintf("waiting for the kubelet on %s to register Node %s", inst.Spec.Address, nodeName(inst)))
		return Result{RequeueAfter: c.pollInterval()}, c.save(ctx, inst)
	}
	if subnetArrived(inst, node) {
		// The Node got its pod subnet. Nothing to do on the host: its
		// kube-proxy service writes what depends on the subnet when it
		// starts (internal/plan, podnetwork.go). Recorded, and saved with
		// the next step.
		inst.Status.PodCIDR = nodeSubnet(inst.Status.Network, node)
		c.Log.Info("node subnet assigned", "instance", inst.Name, "subnet", inst.Status.PodCIDR)
	}
	if !NodeReady(node) && !node.Spec.Unschedulable {
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
	SetCondition(inst, winnodev1.ConditionNodeReady, metav1.ConditionFalse, winnodev1.ReasonNodeNotReady, err.Error())
	// The API server may have changed its mind about bootstrap tokens:
	// --join-credentials=auto asks again.
	if c.Detector != nil {
		c.Detector.Forget()
	}
	// Retry from the start (the host steps again: a fresh token if the old
	// one ran out, services started again), with a fresh clock.
	inst.Status.ConfigurationStarted = nil
	inst.Status.Step = ""
	return stepErr(StepJoin, winnodev1.ReasonNodeNotReady, err)
}

// refreshToken keeps the host's bootstrap token alive while its Node has
// not registered (RefreshTokens). A token issued or refreshed at step
// credentials has five sixths of TokenTTL left for that long, so none is
// looked at before a sixth of it has passed. The new expiration is
// recorded (status.joinCredentialExpires, saved by join): the next refresh
// expects it. A token that cannot be refreshed (revoked, run out, changed,
// or no expiration recorded) starts the configuration again, with a new
// one.
func (c *Configurer) refreshToken(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	started, id := inst.Status.ConfigurationStarted, inst.Status.BootstrapTokenID
	if !c.RefreshTokens || id == "" || started == nil || time.Since(started.Time) < c.tokenTTL()/6 {
		return nil
	}
	err := fmt.Errorf("bootstrap token %s of instance %s: no expiration recorded", id, inst.Name)
	if exp := inst.Status.JoinCredentialExpires; exp != nil {
		var next time.Time
		if next, err = bootstrap.RefreshToken(ctx, c.Kube, inst.Name, id, exp.Time, c.tokenTTL()); err == nil {
			inst.Status.JoinCredentialExpires = &metav1.Time{Time: next}
			return nil
		}
	}
	inst.Status.ConfigurationStarted = nil
	inst.Status.Step = ""
	return stepErr(StepJoin, winnodev1.ReasonCredentialsFailed, fmt.Errorf("%w; configuring the host again with a new one", err))
}
