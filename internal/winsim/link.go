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
}

func (l *linkShaper) set(o LinkOptions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opts = o
	l.limiter = nil
	if o.BytesPerSecond > 0 {
		l.limiter = rate.NewLimiter(rate.Limit(o.BytesPerSecond), max(o.BytesPerSecond, linkChunk))
	}
}

// delay waits as long as n bytes take on the link.
func (l *linkShaper) delay(n int) {
	l.mu.Lock()
	latency, limiter := l.opts.Latency, l.limiter
	l.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	if limiter != nil {
		for n > 0 {
			chunk := min(n, limiter.Burst())
			_ = limiter.WaitN(context.Background(), chunk)
			n -= chunk
		}
	}
}

// SetLink shapes the link to the host (latency, bandwidth) from now on, for
// new and open connections; SetLink(LinkOptions{}) removes the shaping.
func (h *Host) SetLink(o LinkOptions) {
	h.link.set(o)
	h.log.Info("simulated host: link shaped", "latency", o.Latency, "bytesPerSecond", o.BytesPerSecond)
}
