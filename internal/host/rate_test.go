package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/winsim"
)

// An upload over a link that trickles below the minimum rate is stopped
// with a *SlowTransferError once a whole grace period has gone by, its
// connection closed (the link is clogged with what it queued); at a fair
// rate the same upload completes.
func TestSlowTransferIsStopped(t *testing.T) {
	h := newSimHost(t)
	opts := h.options()
	opts.MinTransferRate = 16 << 10
	opts.SlowTransferGrace = time.Second
	c := connect(t, opts)
	f := localFile(t, `C:\k\big.bin`, 8<<20) // more than SFTP keeps in flight

	h.SetLink(winsim.LinkOptions{BytesPerSecond: 1 << 10})
	done := make(chan error, 1)
	go func() {
		_, err := c.Sync(context.Background(), []LocalFile{f}, nil, stagingDir, nil)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		h.SetLink(winsim.LinkOptions{})
		t.Fatal("a sync at 1 KiB/s was not stopped within a minute (minimum 16 KiB/s over a second)")
	}
	var slow *SlowTransferError
	if !errors.As(err, &slow) || slow.Min != 16<<10 || !strings.Contains(err.Error(), c.Address()) {
		t.Fatalf("sync at 1 KiB/s: %v, want a *SlowTransferError naming the host and the minimum", err)
	}
	// A fair link: the same upload completes under the same guard.
	h.SetLink(winsim.LinkOptions{BytesPerSecond: 64 << 20})
	defer h.SetLink(winsim.LinkOptions{})
	c = connect(t, opts)
	if _, err := c.Sync(context.Background(), []LocalFile{f}, nil, stagingDir, nil); err != nil {
		t.Fatalf("sync at 64 MiB/s: %v", err)
	}
}
