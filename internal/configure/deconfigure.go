package configure

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// Deconfigure is the mirror of Configure, for an instance being deleted:
// cordon and drain the Node (evictions, as `kubectl drain` does), run
// `winnode-agent.exe remove` on the host (services in reverse dependency
// order, then files; logs kept), delete the Node, revoke the bootstrap
// tokens and forget the host key. When it returns a zero Result and no
// error the host is clean and the caller may drop the finalizer.
//
// Draining does not block: evictions are requested and Deconfigure asks to
// be called again until the pods are gone (or DrainTimeout has passed since
// the deletion, after which the Node is deleted anyway, with an event). A
// host that cannot be reached is left alone with an event; the Node is
// deleted and the token revoked all the same.
func (c *Configurer) Deconfigure(ctx context.Context, inst *winnodev1.WindowsInstance) (Result, error) {
	c.beginPass()
	defer c.endPass(inst)
	if configuredBeforeItWasRecorded(inst) {
		inst.Status.HostConfigured = true
	}
	if inst.Status.Phase != winnodev1.PhaseDeconfiguring {
		c.setPhase(inst, winnodev1.PhaseDeconfiguring)
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonDeconfiguring, "the instance is being deleted; the host is being cleaned")
	}
	node, err := c.getNode(ctx, inst)
	if errors.Is(err, errNodeNameConflict) {
		// The Node of that name is not this instance's: left untouched.
		c.event(inst, corev1.EventTypeWarning, winnodev1.ReasonNodeNameConflict, "not draining or deleting Node %s: it is not the Node this instance registered", nodeName(inst))
		node, err = nil, nil
	}
	if err != nil {
		return Result{}, err
	}
	if node != nil {
		if err := c.step(ctx, inst, StepDrain); err != nil {
			return Result{}, err
		}
		if err := c.cordonIfSchedulable(ctx, node); err != nil {
			return Result{}, err
		}
		left, err := c.drain(ctx, inst, node.Name, c.deconfigureStarted(inst), "deleting the Node anyway")
		if err != nil {
			return Result{}, err
		}
		if left > 0 {
			return Result{RequeueAfter: c.pollInterval()}, nil
		}
	}

	if err := c.step(ctx, inst, StepRemove); err != nil {
		return Result{}, err
	}
	c.removeFromHost(ctx, inst)

	if err := c.step(ctx, inst, StepDeleteNode); err != nil {
		return Result{}, err
	}
	if err := c.deleteNode(ctx, inst); err != nil {
		return Result{}, err
	}
	if err := c.revokeTokens(ctx, inst); err != nil {
		return Result{}, err
	}
	inst.Status.HostKey, inst.Status.HostKeyFingerprint = "", ""
	c.event(inst, corev1.EventTypeNormal, "Deconfigured", "host %s deconfigured and Node %s deleted", inst.Spec.Address, orString(nodeName(inst), "(none)"))
	return Result{}, c.save(ctx, inst)
}

// configuredBeforeItWasRecorded: an instance of a winnode release that did
// not record status.hostConfigured, which had installed its plan (it
// joined, or was at a step after sync when it was deleted).
func configuredBeforeItWasRecorded(inst *winnodev1.WindowsInstance) bool {
	if inst.Status.HostConfigured || inst.Status.Phase == winnodev1.PhaseDeconfiguring {
		return false
	}
	switch inst.Status.Step {
	case StepSync, StepApply, StepJoin, StepFinish:
		return true
	}
	return inst.Status.JoinedAt != nil && inst.Status.NodeNameFixedAt == nil
}

// deconfigureStarted is when the instance was deleted (or when this
// Configurer began draining it, for an instance not stored in the cluster):
// where the drain timeout of a deconfiguration counts from.
func (c *Configurer) deconfigureStarted(inst *winnodev1.WindowsInstance) time.Time {
	if inst.DeletionTimestamp != nil {
		return inst.DeletionTimestamp.Time
	}
	if c.drainStarted.IsZero() {
		c.drainStarted = time.Now()
	}
	return c.drainStarted
}

// removeFromHost runs `winnode-agent.exe remove`. A host that cannot be
// reached (down, key refused, host key changed) is left alone with an
// event: the instance goes away all the same.
func (c *Configurer) removeFromHost(ctx context.Context, inst *winnodev1.WindowsInstance) {
	leave := func(err error) {
		c.event(inst, corev1.EventTypeWarning, "HostLeftAlone", "could not clean host %s, leaving it as it is (its services and files stay; run `winnode-agent.exe remove` on it by hand): %v", inst.Spec.Address, err)
	}
	if !inst.Status.HostConfigured {
		// Nothing of winnode's plan reached the host through this
		// instance: never reached, or refused for a node name, host key or
		// address conflict — a host that may well be another instance's.
		// Nothing is run on it.
		return
	}
	cl, err := c.connect(ctx, inst)
	if err != nil {
		leave(err)
		return
	}
	defer cl.Close()
	err = c.runRemove(ctx, inst, cl)
	var notFound *host.ProgramNotFoundError
	switch {
	case err == nil:
		c.event(inst, corev1.EventTypeNormal, "Removed", "removed winnode's services and files from host %s (logs kept)", inst.Spec.Address)
	case errors.As(err, &notFound):
		// Never configured, or already removed.
	default:
		leave(err)
	}
}

// runRemove runs `winnode-agent.exe remove` from C:\k where the agent
// secured it (status.agentSecured), and otherwise from the SSH user's
// profile folder as on first contact (agent_install.go): C:\k may then be
// a local user's, and so may what it holds. The agent keeps its running
// program (Windows cannot delete it), so that copy is deleted afterwards.
func (c *Configurer) runRemove(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client) error {
	agent, payloadErr := c.agentFile()
	remove := func(path string) error {
		ctx, cancel := context.WithTimeout(ctx, c.agentTimeout())
		defer cancel()
		var res plan.Result
		return cl.RunAgent(ctx, path, []string{"remove"}, nil, &res)
	}
	if !inst.Status.AgentSecured {
		if payloadErr != nil {
			return payloadErr
		}
		return c.withAgentInProfile(ctx, inst, cl, agent, remove)
	}
	path := plan.KDir + `\` + plan.PayloadAgent // where payloads put it
	if payloadErr == nil {
		path = agent.HostPath
	}
	if err := remove(path); err != nil {
		return err
	}
	if err := cl.RemoveFile(ctx, path); err != nil {
		c.Log.Info("could not delete the agent from the host", "instance", inst.Name, "error", err.Error())
	}
	if dir, err := winpath.Parse(path); err == nil {
		_ = cl.RemoveEmptyDir(ctx, dir.Dir().String())
	}
	return nil
}

// deleteNode deletes the Node this instance registered: the one with the
// recorded UID (a precondition of the delete), never a Node by its name
// alone. A Node of that name with another UID is not this instance's and
// stays.
func (c *Configurer) deleteNode(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	name, uid := nodeName(inst), types.UID(inst.Status.NodeUID)
	if name == "" || uid == "" {
		return nil
	}
	err := c.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsConflict(err) {
		c.Log.Info("not deleting a Node of this name: it is not the one this instance registered", "instance", inst.Name, "node", name, "uid", uid)
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %s of WindowsInstance %s: %w", name, inst.Name, err)
	}
	return nil
}
