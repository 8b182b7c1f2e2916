package configure

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// Of two instances reporting one hostname, the one that recorded its
// Node's UID keeps the name, else the older one; other names do not count.
func TestNodeNameOwner(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	mk := func(name string, created metav1.Time, node, uid string) winnodev1.WindowsInstance {
		return *builder.Instance(name).Created(created.Time).Node(node, uid).Build()
	}
	configured := mk("configured", t1, "WIN-A", "uid-1")
	older := mk("older", t0, "win-a", "")
	newer := mk("newer", t1, "WIN-A", "")
	other := mk("other", t0, "WIN-B", "uid-2")
	all := []winnodev1.WindowsInstance{configured, older, newer, other}
	for _, c := range []struct {
		inst winnodev1.WindowsInstance
		want string
	}{
		{configured, ""},          // it registered the Node: it keeps the name
		{older, "configured"},     // older, but the other one recorded the Node
		{newer, "configured"},     //
		{other, ""},               // another name
		{mk("x", t0, "", ""), ""}, // no name reported yet
	} {
		if got := NodeNameOwner(&c.inst, all); got != c.want {
			t.Errorf("%s: owner %q, want %q", c.inst.Name, got, c.want)
		}
	}
	// Without a recorded UID, the older instance keeps the name.
	if got := NodeNameOwner(&newer, []winnodev1.WindowsInstance{older, newer}); got != "older" {
		t.Errorf("newer: owner %q, want older", got)
	}
	if got := NodeNameOwner(&older, []winnodev1.WindowsInstance{older, newer}); got != "" {
		t.Errorf("older: owner %q, want none", got)
	}
}
