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
	modeSet := base()
	modeSet.Generation = 2
	modeSet.Spec.ContainerRuntime = winnodev1.ContainerRuntimeManaged
	modeAndAddress := modeSet.DeepCopy()
	modeAndAddress.Spec.Address = "10.9.9.9"
	modeChanged := modeSet.DeepCopy()
	modeChanged.Generation = 3
	modeChanged.Spec.ContainerRuntime = winnodev1.ContainerRuntimeExisting
	cases := []struct {
		name string
		old  *winnodev1.WindowsInstance
		new  *winnodev1.WindowsInstance
		want bool
	}{
		{"the reconciler's own status write", nil, statusOnly, false},
		{"the reconciler giving spec.containerRuntime its mode", nil, modeSet, false},
		{"the mode given with another spec change", nil, modeAndAddress, true},
		{"an administrator changing the mode", modeSet, modeChanged, true},
		{"spec changed", nil, spec, true},
		{"deletion started", nil, deleting, true},
		{"host key cleared by an administrator", nil, cleared, true},
	}
	for _, c := range cases {
		old := c.old
		if old == nil {
			old = base()
		}
		if got := (instanceChanged{}).Update(event.UpdateEvent{ObjectOld: old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
