package winsim

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// LinkOptions shapes the network link to a host: every SSH connection's
// bytes are delayed by Latency (each way) and limited to BytesPerSecond in
// each direction, shared by all connections to the host. Zero values mean
// no shaping.
type LinkOptions struct {
	Latency        time.Duration
	BytesPerSecond int
}

// linkChunk is the largest write sent at once, so that a limit applies
// smoothly.
const linkChunk = 16 << 10

// linkShaper applies LinkOptions; the zero value shapes nothing.
type linkShaper struct {
	mu      sync.Mutex
	opts    LinkOptions
	limiter *rate.Limiter
	changed chan struct{} // closed when the settings change, ending waits
	shaped  int64         // bytes that went through a limit (for tests)
	held    int64         // bytes waiting out the latency now (for tests)
}

func (l *linkShaper) set(o LinkOptions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opts = o
	l.limiter = nil
	if l.changed != nil {
		close(l.changed)
	}
	l.changed = make(chan struct{})
	if o.BytesPerSecond > 0 {
		// The bucket holds 10 ms worth of bytes: enough that timer
		// granularity does not slow the link below its rate, small enough
		// that a transfer cannot start with a free burst (a bucket of one
		// second would let the first second's bytes through unlimited).
		l.limiter = rate.NewLimiter(rate.Limit(o.BytesPerSecond), max(o.BytesPerSecond/100, linkChunk))
	}
}

// delay waits as long as n bytes take on the link.
func (l *linkShaper) delay(n int) {
	l.mu.Lock()
	latency, limiter, changed := l.opts.Latency, l.limiter, l.changed
	if limiter != nil {
		l.shaped += int64(n)
	}
	l.mu.Unlock()
	if latency == 0 && limiter == nil {
		return
	}
	// A change of settings ends the wait, so that lifting a fault takes
	// effect at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-changed:
			cancel()
		case <-ctx.Done():
		}
	}()
	if latency > 0 {
		l.hold(int64(n))
		t := time.NewTimer(latency)
		select {
		case <-t.C:
			l.hold(-int64(n))
		case <-ctx.Done():
			l.hold(-int64(n))
			t.Stop()
			return
		}
	}
	for n > 0 && limiter != nil {
		chunk := min(n, limiter.Burst())
		if limiter.WaitN(ctx, chunk) != nil {
			return
		}
		n -= chunk
	}
}

func (l *linkShaper) hold(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held += n
}

// holding is how many bytes wait out the latency now.
func (l *linkShaper) holding() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// SetLink shapes the link to the host (latency, bandwidth) from now on, for
// new and open connections; SetLink(LinkOptions{}) removes the shaping.
func (h *Host) SetLink(o LinkOptions) {
	h.link.set(o)
	h.log.Info("simulated host: link shaped", "latency", o.Latency, "bytesPerSecond", o.BytesPerSecond)
}
