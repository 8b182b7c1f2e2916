package configure

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/plan"
)

// A restart the plan needs: the agent enabled a Windows feature
// (Containers) that Windows finishes only when it starts again, and ended
// its apply with RebootRequired before touching any service. The
// configurer then restarts the host (`winnode-agent reboot`), records
// condition RebootRequired (reason Rebooting) and an event, and waits for
// the host to come back without counting its absence as a failure: while
// the host does not answer, or its agent says the restart has not
// happened yet (info's rebootPending), it only checks again later. Once
// the host is back the configuration goes on where it was (the apply runs
// again and finds the feature enabled), and the condition goes.

// rebootTimeout is how long a restarting host may stay away before its
// absence is a failure again.
const rebootTimeout = 15 * time.Minute

// EventReasonRebooted is the Normal event of a host back from the restart
// winnode asked for.
const EventReasonRebooted = "Rebooted"

// errRebooting: the host is restarting; check again later.
var errRebooting = errors.New("the host is restarting")

// rebootIfRequired answers an apply that ended with RebootRequired by
// restarting the host; any other error is returned as it is.
func (c *Configurer) rebootIfRequired(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, applyErr error) error {
	var pe *plan.Error
	if !errors.As(applyErr, &pe) || pe.Code != plan.ErrRebootRequired {
		return applyErr
	}
	agent, err := c.agentFile()
	if err != nil {
		return stepErr(StepApply, winnodev1.ReasonApplyFailed, err)
	}
	rctx, cancel := context.WithTimeout(ctx, c.agentTimeout())
	defer cancel()
	var res plan.Result
	// The agent's default reason ("a Windows feature needs a restart"):
	// the apply's message is free text, which no command line may carry
	// (host.RunAgent refuses what the host's shell would interpret).
	err = cl.RunAgent(rctx, agent.HostPath, []string{"reboot"}, nil, &res)
	var unreachable *host.UnreachableError
	if err != nil && !errors.As(err, &unreachable) {
		// The restart was refused; a lost connection means it began.
		return stepErr(StepApply, winnodev1.ReasonApplyFailed, fmt.Errorf("restarting the host after %s: %w", pe.Message, err))
	}
	msg := fmt.Sprintf("%s; winnode restarted host %s and goes on once it is back", pe.Message, inst.Spec.Address)
	SetCondition(inst, winnodev1.ConditionRebootRequired, metav1.ConditionTrue, winnodev1.ReasonRebooting, msg)
	c.event(inst, corev1.EventTypeNormal, string(plan.ErrRebootRequired), "%s", msg)
	if err := c.save(ctx, inst); err != nil {
		return err
	}
	return errRebooting
}

// rebooting says whether the host was restarted by winnode and may still
// be away (within rebootTimeout).
func rebooting(inst *winnodev1.WindowsInstance) bool {
	cond := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionRebootRequired)
	return cond != nil && cond.Status == metav1.ConditionTrue && time.Since(cond.LastTransitionTime.Time) < rebootTimeout
}

// awaitReboot turns the errors of a host that is restarting into a later
// check; other errors stay.
func (c *Configurer) awaitReboot(inst *winnodev1.WindowsInstance, err error) (Result, error) {
	var unreachable *host.UnreachableError
	if errors.Is(err, errRebooting) || (rebooting(inst) && errors.As(err, &unreachable)) {
		c.Log.Info("waiting for the host to restart", "instance", inst.Name)
		return Result{RequeueAfter: c.pollInterval()}, nil
	}
	return Result{}, err
}

// rebooted records a host back from winnode's restart once a plan applies.
func (c *Configurer) rebooted(inst *winnodev1.WindowsInstance) {
	if meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionRebootRequired) == nil {
		return
	}
	removeCondition(inst, winnodev1.ConditionRebootRequired)
	c.event(inst, corev1.EventTypeNormal, EventReasonRebooted, "host %s is back from its restart; the plan is applied", inst.Spec.Address)
}
