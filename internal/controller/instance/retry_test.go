package instance

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/handler"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestRetryDelay(t *testing.T) {
	const base, max = time.Second, 2 * time.Minute
	for _, c := range []struct {
		name     string
		failures int
		u        float64
		want     time.Duration
	}{
		{"the first retry, no jitter", 1, 0, time.Second},
		{"the first retry, the most jitter", 1, 0.999999, 750*time.Millisecond + 250*time.Nanosecond},
		{"doubling", 4, 0, 8 * time.Second},
		{"the last below the cap", 7, 0, 64 * time.Second},
		{"the cap, reached at the eighth failure", 8, 0, max},
		{"the cap with half the jitter", 8, 0.5, max - max/8},
		{"many failures stay at the cap", 1000, 0, max},
		{"no failure counted yet is the first retry", 0, 0, time.Second},
	} {
		if got := retryDelay(c.failures, base, max, c.u); got != c.want {
			t.Errorf("%s: retryDelay(%d, u=%v) = %v, want %v", c.name, c.failures, c.u, got, c.want)
		}
	}
}

// The order the queue serves: events (0), then the first list and the
// checks a pass asked for (handler.LowPriority), then retries.
func TestNextPass(t *testing.T) {
	for _, c := range []struct {
		name         string
		failed       bool
		requeueAfter time.Duration
		retryIn      time.Duration
		wantAfter    time.Duration
		wantPriority *int
	}{
		{"a failure is retried after its backoff, last", true, 0, 3 * time.Second, 3 * time.Second, new(RetryPriority)},
		{"a failure ignores the pass's own requeue", true, 10 * time.Second, 2 * time.Second, 2 * time.Second, new(RetryPriority)},
		{"a periodic check queues with the first list", false, 10 * time.Minute, 0, 10 * time.Minute, new(handler.LowPriority)},
		{"done, nothing queued", false, 0, 0, 0, nil},
	} {
		got := nextPass(c.failed, c.requeueAfter, c.retryIn)
		if got.RequeueAfter != c.wantAfter || (got.Priority == nil) != (c.wantPriority == nil) ||
			(got.Priority != nil && *got.Priority != *c.wantPriority) {
			t.Errorf("%s: %+v, want after %v at priority %v", c.name, got, c.wantAfter, c.wantPriority)
		}
	}
	if !(RetryPriority < handler.LowPriority && handler.LowPriority < 0) {
		t.Errorf("retries (%d) must come after the first list (%d), which comes after events (0)", RetryPriority, handler.LowPriority)
	}
}

// Consecutive failures of one instance back off; a success starts again
// from the first delay; instances count apart.
func TestRetriesCountPerInstance(t *testing.T) {
	r := newRetries(time.Second, time.Minute)
	for i := 1; i <= 3; i++ {
		if _, n := r.failed("a"); n != i {
			t.Fatalf("failure %d of a counted as %d", i, n)
		}
	}
	if d, n := r.failed("b"); n != 1 || d > time.Second {
		t.Errorf("b's first failure: %v after %d failures, want at most 1s after 1", d, n)
	}
	r.succeeded("a")
	if d, n := r.failed("a"); n != 1 || d > time.Second {
		t.Errorf("a's failure after a success: %v after %d failures, want at most 1s after 1", d, n)
	}
}

// A first configuration comes first, whether its instance was in the
// informer's first list or created later; from the first list, a
// configured instance's check comes with the periodic checks, and an
// instance that had failed with the retries.
func TestCreatePriority(t *testing.T) {
	inPhase := func(p winnodev1.Phase) *winnodev1.WindowsInstance {
		return builder.Instance("a").Phase(p).Build()
	}
	for _, c := range []struct {
		name        string
		inst        *winnodev1.WindowsInstance
		initialList bool
		want        int
	}{
		{"created while the operator runs", inPhase(""), false, 0},
		{"never tried, in the first list", inPhase(""), true, 0},
		{"Ready, in the first list", inPhase(winnodev1.PhaseReady), true, handler.LowPriority},
		{"configuring, in the first list", inPhase(winnodev1.PhaseConfiguring), true, handler.LowPriority},
		{"Failed, in the first list", inPhase(winnodev1.PhaseFailed), true, RetryPriority},
		{"Failed, created again while the operator runs", inPhase(winnodev1.PhaseFailed), false, 0},
	} {
		if got := createPriority(c.inst, c.initialList); got != c.want {
			t.Errorf("%s: priority %d, want %d", c.name, got, c.want)
		}
	}
}
