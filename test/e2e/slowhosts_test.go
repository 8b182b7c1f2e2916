package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/winsim"
)

// Ten hosts whose links trickle at 1 KB/s, as many as the operator has
// configuration workers, cannot hold it: each upload to them fails with
// SlowHost once it has run below the minimum rate for the grace period,
// and they are retried with backoff, while a removal completes and a
// normal host is configured. Without the minimum rate, each of the ten
// would keep a worker for as long as the payload takes at 1 KB/s (hours).
func TestSlowHostsDoNotHoldTheOperator(t *testing.T) {
	w := getWorld(t)
	leaving := w.newHost(t)
	w.startOperator(t, operatorOptions{minTransferRate: 16 << 10, slowTransferGrace: 3 * time.Second})
	w.instanceFor(t, "leaving", leaving)
	w.waitReady(t, "leaving", 3*time.Minute)

	const slow = 10 // startOperator's MaxConcurrent
	for i := range slow {
		h := w.newHost(t)
		h.SetLink(winsim.LinkOptions{BytesPerSecond: 1000})
		w.instanceFor(t, fmt.Sprintf("trickle-%d", i), h)
	}
	w.deleteAndWait(t, "leaving")
	if n := w.nodesOfHost(t, leaving); n != 0 {
		t.Errorf("the removed host still has %d Node(s)", n)
	}
	normal := w.newHost(t)
	w.instanceFor(t, "normal", normal)
	w.waitReady(t, "normal", 3*time.Minute)
	for i := range slow {
		w.waitEvents(t, metav1.NamespaceDefault, fmt.Sprintf("trickle-%d", i), winnodev1.ReasonSlowHost)
		if inst := w.get(t, fmt.Sprintf("trickle-%d", i)); inst.Status.Phase == winnodev1.PhaseReady {
			t.Errorf("trickle-%d is Ready through a 1 KB/s link", i)
		}
	}
}
