package instance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// The pure parts of the instance reconciler; those of the engine it calls
// are tested in internal/configure, and the whole end to end in test/e2e.

func TestInstanceChangedPredicate(t *testing.T) {
	base := builder.Instance("").Generation(1).Phase(winnodev1.PhaseReady).PinnedHostKey("ssh-ed25519 AAAA").Build
	statusOnly := base()
	statusOnly.Status.Step = "sync"
	spec := base()
	spec.Generation = 2
	deleting := base()
	deleting.DeletionTimestamp = &metav1.Time{}
	cleared := base()
	cleared.Status.HostKey = ""
	cases := []struct {
		name string
		new  *winnodev1.WindowsInstance
		want bool
	}{
		{"the reconciler's own status write", statusOnly, false},
		{"spec changed", spec, true},
		{"deletion started", deleting, true},
		{"host key cleared by an administrator", cleared, true},
	}
	for _, c := range cases {
		if got := (instanceChanged{}).Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
