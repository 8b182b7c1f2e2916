package configure

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/plan"
)

// apply runs `winnode-agent.exe apply --plan <staged plan>`.
func (c *Configurer) apply(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, r *plan.Rendered, stagedPlan string) error {
	agent, err := c.agentFile()
	if err != nil {
		return stepErr(StepApply, winnodev1.ReasonApplyFailed, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.applyTimeout())
	defer cancel()
	var res plan.Result
	if err := cl.RunAgent(ctx, agent.HostPath, []string{"apply", "--plan", stagedPlan}, nil, &res); err != nil {
		// A feature enabled that needs a restart: reboot.go.
		if err := c.rebootIfRequired(ctx, inst, cl, err); errors.Is(err, errRebooting) || errors.As(err, new(*StepError)) {
			return err
		}
		reason := reasonOf(err, winnodev1.ReasonApplyFailed)
		var pe *plan.Error
		if errors.As(err, &pe) && pe.Code == plan.ErrRolledBack {
			reason = winnodev1.ReasonRolledBack
		}
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, reason, err.Error())
		return stepErr(StepApply, reason, err)
	}
	c.rebooted(inst)
	c.agentWarnings(inst, res.Warnings)
	var changed []string
	for _, s := range res.Services {
		switch {
		case s.Action != plan.ServiceUnchanged:
			changed = append(changed, fmt.Sprintf("%s %s", s.Name, s.Action))
		case s.Restarted:
			changed = append(changed, s.Name+" restarted")
		}
	}
	SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionTrue, winnodev1.ReasonPlanApplied,
		fmt.Sprintf("plan %s applied", r.Plan.Version))
	msg := "no service changed"
	if len(changed) > 0 {
		msg = "services: " + strings.Join(changed, ", ")
	}
	c.event(inst, corev1.EventTypeNormal, winnodev1.ReasonPlanApplied, "applied plan %s on %s (%s)", r.Plan.Version, inst.Spec.Address, msg)
	return nil
}

// ReasonAgentWarning is the event of something the agent refused to do
// without failing: an untrusted state file set aside, a path outside
// winnode's folders or a service not marked as winnode's left alone
// (cmd/winnode-agent/README.md, docs/troubleshooting.md).
const ReasonAgentWarning = "AgentWarning"

// maxWarningEvents bounds the AgentWarning events of one pass of Configure
// or Deconfigure: a host decides how many warnings it reports, and each
// event is a write to the API server and a log line.
const maxWarningEvents = 20

// warningBudget counts the warnings of one pass.
type warningBudget struct {
	recorded, dropped int
}

// agentWarnings records the agent's warnings as Warning events, at most
// maxWarningEvents in a pass; summary reports the rest in one.
func (c *Configurer) agentWarnings(inst *winnodev1.WindowsInstance, warnings []string) {
	for _, w := range warnings {
		if c.warnings.recorded >= maxWarningEvents {
			c.warnings.dropped++
			continue
		}
		c.warnings.recorded++
		c.event(inst, corev1.EventTypeWarning, ReasonAgentWarning, "the agent on %s: %s", inst.Spec.Address, truncate(w, 512))
	}
}

// beginPass starts a pass of Configure or Deconfigure: its warnings are
// counted afresh, and the cluster facts read once (clusterfacts.go).
func (c *Configurer) beginPass() { c.warnings, c.pass = warningBudget{}, &passState{} }

// endPass sums up in one event the agent's warnings this pass did not
// record one by one.
func (c *Configurer) endPass(inst *winnodev1.WindowsInstance) {
	if n := c.warnings.dropped; n > 0 {
		c.event(inst, corev1.EventTypeWarning, ReasonAgentWarning, "the agent on %s reported %d more warnings; only the first %d of this attempt are recorded as events",
			inst.Spec.Address, n, maxWarningEvents)
	}
	c.warnings, c.pass = warningBudget{}, nil
}
