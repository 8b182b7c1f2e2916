package testkit

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Interval is how often Eventually asks its condition.
const Interval = 100 * time.Millisecond

// Eventually asks cond every Interval, from now, until it returns true;
// when timeout passes first, it fails the test with
// what it waited for and the state cond last described. cond describes
// what it saw in its second result (an error it met included), so a
// failure says how far the system got.
//
// It is k8s.io/apimachinery's wait.PollUntilContextTimeout with the
// failure message tests need: the state last seen, not only "timed out".
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	last := "(not asked yet)"
	err := wait.PollUntilContextTimeout(context.Background(), Interval, timeout, true, func(context.Context) (bool, error) {
		done, state := cond()
		last = state
		return done, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: not within %s; last seen: %s", what, timeout, last)
	}
}
