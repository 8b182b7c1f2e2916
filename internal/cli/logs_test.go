package cli

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/fixture"
)

// -f prints what each read adds, from the size it last saw, and stops
// when the context ends; the reader gets the size back as its start (a
// rotated file is read from 0 by the reader itself).
func TestFollowPrintsWhatIsAdded(t *testing.T) {
	reads := []struct {
		text string
		size int64
	}{{"two\n", 8}, {"", 8}, {"new file\n", 9}}
	var mu sync.Mutex
	var froms []int64
	ctx, cancel := context.WithCancel(context.Background())
	read := func(_ context.Context, from int64) (string, int64, int64, error) {
		mu.Lock()
		defer mu.Unlock()
		froms = append(froms, from)
		if len(froms) > len(reads) {
			cancel()
			return "", from, from, nil
		}
		r := reads[len(froms)-1]
		return r.text, from, r.size, nil
	}
	var out fixture.SyncBuffer
	o := &logsOptions{interval: time.Millisecond}
	if err := o.followLog(ctx, &out, read, 4); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "two\nnew file\n" {
		t.Errorf("printed %q", got)
	}
	if want := []int64{4, 8, 8, 9}; len(froms) < 4 || !slices.Equal(froms[:4], want) {
		t.Errorf("read from %v, want %v", froms, want)
	}
}

// The kubelet serves C:\var\log at /logs/: each service's log path there.
func TestKubeletLogPath(t *testing.T) {
	for service, want := range map[string]string{
		"kubelet":             "kubelet/kubelet.log",
		"csi-proxy":           "csi-proxy/csi-proxy.log",
		"hybrid-overlay-node": "hybrid-overlay/hybrid-overlay.log",
		"winnode-agent":       "winnode-agent/winnode-agent.log",
	} {
		if got := kubeletLogPath(service); got != want || strings.Contains(got, `\`) {
			t.Errorf("%s: %q, want %q", service, got, want)
		}
	}
}
