package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit"
)

// What the tests observe through other channels than a direct read of the
// object trails that read: a watch delivers later than a GET can see, and
// the operator's event recorder writes events in the background. A test
// that has seen a status must still wait for what goes with it.

// waitEndsWith waits until the phases the watch has delivered for name end
// with want, and returns them all. A watch event can trail a direct read of
// the same object (waitReady's), so a test that has read a phase must wait
// for the recorder to have it too before judging the sequence.
func (pr *phaseRecorder) waitEndsWith(t testing.TB, name string, want ...winnodev1.Phase) []winnodev1.Phase {
	t.Helper()
	var phases []winnodev1.Phase
	testkit.Eventually(t, time.Minute, fmt.Sprintf("the watch to deliver phases ending %v for %s", want, name), func() (bool, string) {
		phases = pr.of(name)
		return len(phases) >= len(want) && slices.Equal(phases[len(phases)-len(want):], want), fmt.Sprintf("phases so far: %v", phases)
	})
	return phases
}

// waitEvents waits until the events about an object include every reason
// in want. The operator's event recorder writes events in the background,
// so an event can reach the API server after the status change it goes
// with: a test that has seen the status must still wait for the event.
func (w *world) waitEvents(t testing.TB, namespace, name string, want ...string) {
	t.Helper()
	testkit.Eventually(t, time.Minute, fmt.Sprintf("events %v about %s", want, name), func() (bool, string) {
		reasons := w.eventReasons(t, namespace, name)
		for _, r := range want {
			if !slices.Contains(reasons, r) {
				return false, fmt.Sprintf("events so far: %v", reasons)
			}
		}
		return true, ""
	})
}
