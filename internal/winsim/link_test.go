package winsim

import (
	"testing"
	"time"
)

// A shaped link holds to its rate from the first byte: one second's worth of
// bytes is scheduled over (about) one second, not let through as a free
// burst. The schedule is the limiter's own, computed for a fixed instant, so
// the test does not depend on how fast this machine is.
func TestLinkLimitHasNoFreeBurst(t *testing.T) {
	const rate = 1_000_000
	var l linkShaper
	l.set(LinkOptions{BytesPerSecond: rate})
	now := time.Now()
	var last time.Duration
	for sent := 0; sent < rate; {
		chunk := min(rate-sent, l.limiter.Burst())
		r := l.limiter.ReserveN(now, chunk)
		if !r.OK() {
			t.Fatalf("a chunk of %d bytes cannot pass a link of %d bytes/s", chunk, rate)
		}
		last = r.DelayFrom(now)
		sent += chunk
	}
	if want := 980 * time.Millisecond; last < want {
		t.Fatalf("one second of bytes is scheduled over %v, want at least %v: the link starts with a free burst", last, want)
	}
}
