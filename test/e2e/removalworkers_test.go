package e2e

import (
	"sync"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
)

// Removals have workers of their own: with the operator's one
// configuration worker held by a configuration that does not end, a Ready
// instance is still removed (its host deconfigured, its Node deleted).
func TestRemovalNotStarvedByConfigurations(t *testing.T) {
	w := getWorld(t)
	leaving, busy := w.newHost(t), w.newHost(t)
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	w.startOperator(t, operatorOptions{maxConcurrent: 1, afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if inst.Name != "busy" || step != configure.StepPlan {
			return
		}
		holdOnce.Do(func() {
			close(held)
			<-release // the only configuration worker stays here
		})
	}})
	w.instanceFor(t, "leaving", leaving)
	w.waitReady(t, "leaving", 3*time.Minute)
	w.instanceFor(t, "busy", busy)
	<-held
	w.deleteAndWait(t, "leaving")
	if n := w.nodesOfHost(t, leaving); n != 0 {
		t.Errorf("the removed host still has %d Node(s)", n)
	}
	releaseOnce.Do(func() { close(release) })
}
