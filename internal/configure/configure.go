package configure

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/plan"
)

// Configure brings the instance's host to a Ready node at c.Version, or
// checks that it still is one. It mutates inst.Status (phase, step,
// conditions, host key, node name, bootstrap token ID, last error) and
// persists it after every step.
//
// The phase machine:
//
//	(new) → Pending → Configuring → Ready ⇄ Upgrading
//	any step failing → Failed (lastError, reason); the next call retries,
//	and the instance stays Failed until it is Ready again
//	a changed host key → Failed + HostKeyMismatch, nothing more until
//	status.hostKey is cleared
//
// A Ready instance is checked by running the agent's info and rendering
// the plan again: when the host runs exactly that plan nothing is uploaded
// or applied, only the Node is checked. A changed payload, version or
// cluster fact moves it to Upgrading, which cordons the Node, syncs,
// applies, and finishes as a first configuration does.
//
// An error is returned after it is recorded in the status; the caller
// retries with backoff. A Result with RequeueAfter asks to be called again
// (waiting for the Node, or the periodic recheck of a Ready instance).
func (c *Configurer) Configure(ctx context.Context, inst *winnodev1.WindowsInstance) (Result, error) {
	c.beginPass()
	defer c.endPass(inst)
	if err := c.expireJoinCredentials(ctx, inst); err != nil {
		return Result{}, err
	}
	res, err := c.configure(ctx, inst)
	return untilCredentialsExpire(inst, res), err
}

// configure is Configure's phase machine.
func (c *Configurer) configure(ctx context.Context, inst *winnodev1.WindowsInstance) (Result, error) {
	if hostKeyBlocked(inst) {
		// Nothing until an administrator clears status.hostKey.
		if c.AfterStep != nil {
			c.AfterStep(inst, StepBlocked)
		}
		return Result{}, nil
	}
	if inst.Status.Phase == "" {
		c.setPhase(inst, winnodev1.PhasePending)
		if err := c.save(ctx, inst); err != nil {
			return Result{}, err
		}
	}
	phase, step := inst.Status.Phase, inst.Status.Step
	if (phase == winnodev1.PhaseConfiguring || phase == winnodev1.PhaseUpgrading || phase == winnodev1.PhaseFailed) && (step == StepJoin || step == StepFinish) {
		// The host is configured; only the Node is awaited. No SSH.
		res, err := c.join(ctx, inst)
		if err != nil {
			return Result{}, c.fail(ctx, inst, err)
		}
		return res, nil
	}
	if phase == winnodev1.PhaseUpgrading && step == StepDrain {
		// Pods are being evicted: wait for them without SSH; once they
		// are gone, go on with the upgrade.
		node, err := c.getNode(ctx, inst)
		if err != nil {
			return Result{}, c.fail(ctx, inst, stepErr(StepDrain, winnodev1.ReasonApplyFailed, err))
		}
		if node != nil {
			drained, res, err := c.drainBeforeRestarts(ctx, inst, node)
			if err != nil {
				return Result{}, c.fail(ctx, inst, err)
			}
			if !drained {
				return res, nil
			}
		}
	}
	res, err := c.configureHost(ctx, inst)
	if err != nil {
		err = c.fail(ctx, inst, err)
		if errors.Is(err, errHostKeyMismatch) {
			// Not retried: an administrator must decide.
			return Result{}, nil
		}
		return Result{}, err
	}
	return res, nil
}

// configureHost runs the steps that talk to the host, in order: connect,
// info, credentials and plan (learn), then, unless the host already runs
// that plan, drain when services restart (makeRoom), and sync and apply
// (install). A Ready instance being checked records no step until it has
// something to change.
func (c *Configurer) configureHost(ctx context.Context, inst *winnodev1.WindowsInstance) (Result, error) {
	wasReady := inst.Status.Phase == winnodev1.PhaseReady || inst.Status.Phase == winnodev1.PhaseUpgrading
	if waiting, res := c.stillWaiting(ctx, inst); waiting {
		return res, nil
	}
	cl, err := c.connectStep(ctx, inst, wasReady)
	if err != nil {
		return c.awaitReboot(inst, err) // a host restarting is away (reboot.go)
	}
	defer cl.Close()
	h, err := c.learn(ctx, inst, cl, wasReady)
	if err != nil {
		return c.awaitReboot(inst, err)
	}
	if upToDate(h.info, h.rendered) && NodeReady(h.node) {
		// The host runs exactly this plan: nothing to upload or apply.
		return c.alreadyApplied(ctx, inst, h, wasReady)
	}
	if err := preflightGate(inst); err != nil {
		return Result{}, err // an upgrade stops before it starts
	}
	if ok, res, err := c.makeRoom(ctx, inst, h, wasReady); err != nil || !ok {
		return res, err
	}
	return c.install(ctx, inst, cl, h, wasReady)
}

// hostState is what the first steps learnt, for the others.
type hostState struct {
	info     *plan.Info     // the agent's info (step info)
	node     *corev1.Node   // the host's Node; nil before it joined
	creds    *credentials   // cluster facts and bootstrap kubeconfig (step credentials)
	rendered *plan.Rendered // the host's plan (step plan)
	restarts []string       // the services the plan restarts
	// agentInstalled: step info uploaded the payload's agent to its
	// place, so the sync need not stage it again.
	agentInstalled bool
}

// connectStep is step connect, then the start of step info: an SSH
// connection to the host (connect.go), and the configuration's clock.
func (c *Configurer) connectStep(ctx context.Context, inst *winnodev1.WindowsInstance, wasReady bool) (*host.Client, error) {
	if !wasReady {
		if err := c.step(ctx, inst, StepConnect); err != nil {
			return nil, err
		}
	}
	cl, err := c.connect(ctx, inst)
	if err != nil {
		return nil, err
	}
	if !wasReady {
		c.start(inst, winnodev1.PhaseConfiguring)
		if err := c.step(ctx, inst, StepInfo); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return cl, nil
}

// learn runs steps info (facts.go) and credentials (credentials.go), reads
// the Node, and renders the plan (sync.go).
func (c *Configurer) learn(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, wasReady bool) (*hostState, error) {
	info, agentInstalled, err := c.facts(ctx, inst, cl)
	if err != nil {
		return nil, err
	}
	if !wasReady {
		// A first configuration (or one retried) stops here on a failed
		// pre-flight check: no credential is issued, nothing is sent.
		if err := preflightGate(inst); err != nil {
			return nil, err
		}
	}
	if wasReady {
		// A service down on a host that was Ready is news; during a
		// configuration, flanneld restarts until the kubelet has joined,
		// as planned.
		c.reportServices(inst, info)
	}
	node, err := c.getNode(ctx, inst)
	if err != nil {
		return nil, stepErr(StepCredentials, winnodev1.ReasonCredentialsFailed, err)
	}
	if !wasReady {
		if err := c.step(ctx, inst, StepCredentials); err != nil {
			return nil, err
		}
	}
	cr, err := c.credentials(ctx, inst, cl, info, node)
	if err != nil {
		return nil, err
	}
	r, err := c.render(ctx, inst, info, cr, node)
	if err != nil {
		return nil, err
	}
	// What the new plan restarts decides whether the Node must be drained
	// (and, for a Ready node, wait for its turn): upgrade.go.
	restarts := plan.ChangedServices(info.InstalledPlan, r.Plan)
	return &hostState{info: info, node: node, creds: cr, rendered: r, restarts: restarts, agentInstalled: agentInstalled}, nil
}

// alreadyApplied records a host that runs its plan already: a Ready
// instance checked (its Node marked again, AfterStep told StepChecked), or
// a configuration that only waits for its Node (join).
func (c *Configurer) alreadyApplied(ctx context.Context, inst *winnodev1.WindowsInstance, h *hostState, wasReady bool) (Result, error) {
	SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionTrue, winnodev1.ReasonPlanApplied,
		fmt.Sprintf("plan %s applied", h.rendered.Plan.Version))
	if !wasReady {
		return c.join(ctx, inst)
	}
	if err := c.markNode(ctx, inst, h.node); err != nil {
		return Result{}, stepErr(StepFinish, winnodev1.ReasonNodeNotReady, err)
	}
	soon := c.checkKubeletPort(ctx, inst, h.node)
	c.ready(inst, h.node)
	if err := c.save(ctx, inst); err != nil {
		return Result{}, err
	}
	if c.AfterStep != nil {
		c.AfterStep(inst, StepChecked)
	}
	return Result{RequeueAfter: c.recheckAfter(soon)}, nil
}

// makeRoom moves a Ready instance to Upgrading (waiting for its turn in the
// rollout when services restart: upgrade.go), and drains the Node before
// services restart under its pods (drain.go). It reports false, with a
// Result to call again, while either waits.
func (c *Configurer) makeRoom(ctx context.Context, inst *winnodev1.WindowsInstance, h *hostState, wasReady bool) (bool, Result, error) {
	if wasReady {
		ok, res, err := c.beginUpgrade(ctx, inst, h.node, h.restarts, installedVersion(h.info), h.rendered.Plan.Version)
		if err != nil || !ok {
			return false, res, err
		}
	}
	if h.node != nil && len(h.restarts) > 0 {
		return c.drainBeforeRestarts(ctx, inst, h.node)
	}
	return true, Result{}, nil
}

// install runs steps plan, sync (sync.go) and apply (apply.go), then waits
// for the Node (join.go).
func (c *Configurer) install(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, h *hostState, wasReady bool) (Result, error) {
	if err := c.step(ctx, inst, StepPlan); err != nil {
		return Result{}, err
	}
	if h.node != nil && !wasReady {
		// A host configured again (after a failure, or a Node left behind):
		// no new pods until it is Ready with the new plan.
		if err := c.cordonIfSchedulable(ctx, h.node); err != nil {
			return Result{}, stepErr(StepPlan, winnodev1.ReasonApplyFailed, err)
		}
	}
	c.event(inst, corev1.EventTypeNormal, EventReasonClusterFacts, "plan %s: cluster facts of %s", h.rendered.Plan.Version, h.creds.source)
	// From here on, winnode's plan reaches the host: deconfiguring this
	// instance cleans it (deconfigure.go).
	inst.Status.HostConfigured = true
	if err := c.step(ctx, inst, StepSync); err != nil {
		return Result{}, err
	}
	stagedPlan, err := c.sync(ctx, inst, cl, h)
	if err != nil {
		return Result{}, err
	}
	if err := c.step(ctx, inst, StepApply); err != nil {
		return Result{}, err
	}
	if err := c.apply(ctx, inst, cl, h.rendered, stagedPlan); err != nil {
		return c.awaitReboot(inst, err)
	}
	return c.join(ctx, inst)
}

// start moves the instance into a configuring phase, starting the clock of
// this configuration when it is not running. A Failed instance being retried
// stays Failed (with its lastError) until it is Ready again, so that its
// phase does not flap while a cause persists.
func (c *Configurer) start(inst *winnodev1.WindowsInstance, phase winnodev1.Phase) {
	switch inst.Status.Phase {
	case winnodev1.PhaseConfiguring, winnodev1.PhaseUpgrading, winnodev1.PhaseFailed:
	default:
		inst.Status.ConfigurationStarted = nil // a new configuration
	}
	if inst.Status.ConfigurationStarted == nil {
		now := metav1.Now()
		inst.Status.ConfigurationStarted = &now
	}
	if inst.Status.Phase == winnodev1.PhaseFailed {
		return
	}
	c.setPhase(inst, phase)
}

func installedVersion(info *plan.Info) string {
	if info.InstalledPlan == nil {
		return "(none)"
	}
	return info.InstalledPlan.Version
}
