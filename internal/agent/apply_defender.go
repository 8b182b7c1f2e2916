package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// excludeFromDefender asks Microsoft Defender Antivirus not to scan the
// files winnode's programs open (the plan's DefenderExclusions), where
// Defender runs, before the services start; exclusions an earlier plan set
// and this one drops are removed. Each exclusion the agent adds is
// recorded, and only those are ever removed.
func (r *applyRun) excludeFromDefender(ctx context.Context) error {
	running, err := r.a.Platform.DefenderRunning(ctx)
	if err != nil {
		return &plan.Error{Code: plan.ErrHost, Message: fmt.Sprintf("asking whether Microsoft Defender Antivirus runs: %v", err)}
	}
	want := r.plan.DefenderExclusions
	if !running {
		want = nil
	}
	for _, p := range want {
		if containsFold(r.st.DefenderExclusions, p) {
			continue
		}
		r.a.Log.Info("adding a Defender process exclusion", "program", p)
		if err := r.a.Platform.AddDefenderExclusion(ctx, p); err != nil {
			return &plan.Error{Code: plan.ErrHost, File: p, Message: fmt.Sprintf("adding a Microsoft Defender Antivirus exclusion: %v", err)}
		}
		r.st.DefenderExclusions = append(r.st.DefenderExclusions, p)
		if err := r.saveState(); err != nil {
			return err
		}
	}
	return r.a.dropDefenderExclusions(ctx, r.st, func(p string) bool { return containsFold(want, p) }, r.saveState)
}

// dropDefenderExclusions removes the recorded exclusions keep does not
// keep, saving the state after each.
func (a *Agent) dropDefenderExclusions(ctx context.Context, st *State, keep func(string) bool, save func() error) error {
	for _, p := range slices.Clone(st.DefenderExclusions) {
		if keep(p) {
			continue
		}
		a.Log.Info("removing a Defender process exclusion", "program", p)
		if err := a.Platform.RemoveDefenderExclusion(ctx, p); err != nil {
			return &plan.Error{Code: plan.ErrHost, File: p, Message: fmt.Sprintf("removing a Microsoft Defender Antivirus exclusion: %v", err)}
		}
		st.DefenderExclusions = slices.DeleteFunc(st.DefenderExclusions, func(e string) bool { return strings.EqualFold(e, p) })
		if err := save(); err != nil {
			return err
		}
	}
	return nil
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(e string) bool { return strings.EqualFold(e, s) })
}
