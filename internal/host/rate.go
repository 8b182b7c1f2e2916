package host

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Defaults of Options.MinTransferRate and Options.SlowTransferGrace.
const (
	// DefaultMinTransferRate is 32 KiB/s (256 kbit/s): the whole payload
	// at that rate takes longer than a sync may (30 minutes), so a host
	// slower than this would fail anyway, only later.
	DefaultMinTransferRate = 32 << 10
	// DefaultSlowTransferGrace: a transfer is judged over its last minute,
	// once it has run a minute.
	DefaultSlowTransferGrace = time.Minute
)

// SlowTransferError: an upload moved fewer bytes than the minimum rate
// allows over a whole grace period; it was stopped so that a slow host does
// not hold the operator (a worker, a connection, memory) for as long as it
// likes. The connection is closed with it; the caller retries later.
type SlowTransferError struct {
	Address string
	// Moved bytes in the last Window; Min is the rate required (bytes/s).
	Moved  int64
	Window time.Duration
	Min    int
}

func (e *SlowTransferError) Error() string {
	return fmt.Sprintf("host %s: the transfer moved %d bytes in the last %s, less than the minimum of %d bytes/s: stopped (the host or its link is too slow; it is retried later)",
		e.Address, e.Moved, e.Window, e.Min)
}

// rateWatch is the minimum-rate guard of one transfer: a goroutine looks
// every tick at how many bytes moved, and cancels the transfer's context
// with a *SlowTransferError when fewer than min×window moved in the last
// window (judged once the transfer has run a whole window).
type rateWatch struct {
	moved  atomic.Int64
	min    int
	window time.Duration
}

// watchRate returns ctx cancelled when the transfer counted in the
// returned rateWatch is too slow, and the function that ends the watch. A
// zero rate or window takes the default; a negative rate watches nothing.
func (c *Client) watchRate(ctx context.Context) (context.Context, *rateWatch, func()) {
	w := &rateWatch{min: c.minRate, window: c.slowGrace}
	if w.min == 0 {
		w.min = DefaultMinTransferRate
	}
	if w.window <= 0 {
		w.window = DefaultSlowTransferGrace
	}
	if w.min < 0 {
		return ctx, w, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	stop := func(err error) {
		// The cause first: the transfer that the closed connection fails
		// must find it (transferError), or it reports a lost connection.
		cancel(err)
		// The link is clogged with what this transfer queued: nothing else
		// (not even closing the SFTP session) gets through it, so the
		// connection itself goes. The caller connects again later.
		_ = c.ssh.Close()
	}
	go w.run(ctx, c.address, stop, done)
	return ctx, w, func() { close(done); cancel(nil) }
}

// run samples the counter every window/10 and keeps the samples of the
// last window.
func (w *rateWatch) run(ctx context.Context, address string, stop func(error), done <-chan struct{}) {
	tick := max(w.window/10, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	type sample struct {
		at    time.Time
		moved int64
	}
	start := time.Now()
	samples := []sample{{start, 0}}
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case now := <-t.C:
			samples = append(samples, sample{now, w.moved.Load()})
			// Drop the samples older than a window, keeping one at or
			// before its start.
			for len(samples) > 1 && now.Sub(samples[1].at) >= w.window {
				samples = samples[1:]
			}
			first := samples[0]
			if now.Sub(first.at) < w.window {
				continue // not a whole window yet
			}
			moved := samples[len(samples)-1].moved - first.moved
			if float64(moved) < float64(w.min)*w.window.Seconds() {
				stop(&SlowTransferError{Address: address, Moved: moved, Window: w.window, Min: w.min})
				return
			}
		}
	}
}

// count adds n bytes moved.
func (w *rateWatch) count(n int) {
	if w != nil {
		w.moved.Add(int64(n))
	}
}

// rateKey carries a transfer's rateWatch in its context, to the readers
// that count its bytes.
type rateKey struct{}

// watchTransfer starts the rate guard of one transfer (Sync, Install).
func (c *Client) watchTransfer(ctx context.Context) (context.Context, func()) {
	ctx, w, end := c.watchRate(ctx)
	return context.WithValue(ctx, rateKey{}, w), end
}

// rateOf is the rateWatch of ctx's transfer (nil: none; counting is then a
// no-op).
func rateOf(ctx context.Context) *rateWatch {
	w, _ := ctx.Value(rateKey{}).(*rateWatch)
	return w
}
