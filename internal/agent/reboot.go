package agent

import (
	"context"

	"github.com/winnode/winnode/internal/plan"
)

// Reboot restarts the host RebootDelay from now, once no other agent
// applies or removes (the lock), so that a restart a plan needs
// (ErrRebootRequired) never cuts another run short. It answers before the
// host goes down.
func (a *Agent) Reboot(ctx context.Context, reason string) (*plan.Result, error) {
	res := newResult("reboot", "")
	unlock, err := a.lock()
	if err != nil {
		return res, err
	}
	defer unlock()
	a.Log.Info("restarting the host", "reason", reason, "in", RebootDelay)
	if err := a.Platform.Reboot(ctx, "winnode: "+reason, RebootDelay); err != nil {
		return res, plan.AsError(err, plan.ErrHost)
	}
	return res, nil
}
