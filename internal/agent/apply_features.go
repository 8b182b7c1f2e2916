package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/winnode/winnode/internal/plan"
)

// enableFeatures enables each Windows feature the plan needs (Containers,
// for containerd) before any service is touched. A feature Windows can
// only finish enabling at the next start stops the apply with
// ErrRebootRequired: the operator restarts the host (`winnode-agent
// reboot`) and applies again, which then finds the feature enabled.
func (r *applyRun) enableFeatures(ctx context.Context) error {
	for _, name := range r.plan.WindowsFeatures {
		state, err := r.a.Platform.WindowsFeature(ctx, name)
		if errors.Is(err, ErrFeatureUnknown) {
			return &plan.Error{Code: plan.ErrWindowsFeature, Message: fmt.Sprintf("Windows feature %s does not exist on this host (%v): a Windows Server release with it is needed", name, err)}
		}
		if err != nil {
			return &plan.Error{Code: plan.ErrWindowsFeature, Message: fmt.Sprintf("reading the state of Windows feature %s: %v", name, err)}
		}
		switch state {
		case FeatureEnabled:
			continue
		case FeatureEnablePending:
			return rebootRequired(name, "was enabled earlier")
		}
		r.a.Log.Info("enabling Windows feature", "feature", name)
		restart, err := r.a.Platform.EnableWindowsFeature(ctx, name)
		if err != nil {
			return &plan.Error{Code: plan.ErrWindowsFeature, Message: fmt.Sprintf("enabling Windows feature %s: %v", name, err)}
		}
		if restart {
			return rebootRequired(name, "is now enabled")
		}
	}
	return nil
}

func rebootRequired(feature, what string) error {
	return &plan.Error{Code: plan.ErrRebootRequired, Message: fmt.Sprintf(
		"Windows feature %s %s; Windows finishes enabling it when it restarts: restart the host (winnode-agent reboot) and apply again", feature, what)}
}
