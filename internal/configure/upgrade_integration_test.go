package configure

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
)

// rolloutTests numbers the tests' labels.
var rolloutTests atomic.Int64

// labelledReader lists only one test's WindowsInstances (they are
// cluster-scoped, and other tests of the package create some too).
type labelledReader struct {
	client.Reader
	label string
}

func (r labelledReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.MatchingLabels{"winnode.io/test": r.label})...)
}

// rolloutClient is a direct client of the test binary's control plane.
func rolloutClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := winnodev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(testenv.Get(t).Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rolloutInstance creates a WindowsInstance in the given phase.
func rolloutInstance(t *testing.T, c client.Client, label, name string, phase winnodev1.Phase, joined bool) *winnodev1.WindowsInstance {
	t.Helper()
	ctx := context.Background()
	inst := &winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"winnode.io/test": label}},
		Spec: winnodev1.WindowsInstanceSpec{Address: "192.0.2.1", Port: 22, Username: "Administrator",
			Source: winnodev1.SourceRef{Kind: winnodev1.SourceManual}},
	}
	if err := c.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur := &winnodev1.WindowsInstance{}
		if c.Get(context.Background(), client.ObjectKeyFromObject(inst), cur) == nil {
			controllerutil.RemoveFinalizer(cur, winnodev1.Finalizer)
			_ = c.Update(context.Background(), cur)
			_ = c.Delete(context.Background(), cur)
		}
	})
	inst.Status.Phase = phase
	if joined {
		now := metav1.Now()
		inst.Status.JoinedAt = &now
	}
	if err := c.Status().Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	return inst
}

// The rollout counts, from the API server, the nodes out of service:
// Upgrading ones, and Failed ones that had joined; not Failed ones that never
// joined, nor ones being deleted.
func TestRolloutCountsNodesOutOfService(t *testing.T) {
	c := rolloutClient(t)
	ctx := context.Background()
	label := fmt.Sprintf("rollout-%d", rolloutTests.Add(1))
	rolloutInstance(t, c, label, label+"-ready", winnodev1.PhaseReady, true)
	rolloutInstance(t, c, label, label+"-upgrading", winnodev1.PhaseUpgrading, true)
	rolloutInstance(t, c, label, label+"-broken", winnodev1.PhaseFailed, true)
	rolloutInstance(t, c, label, label+"-never-joined", winnodev1.PhaseFailed, false)
	leaving := rolloutInstance(t, c, label, label+"-leaving", winnodev1.PhaseUpgrading, true)
	controllerutil.AddFinalizer(leaving, winnodev1.Finalizer)
	if err := c.Update(ctx, leaving); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, leaving); err != nil {
		t.Fatal(err)
	}

	reader := labelledReader{Reader: c, label: label}
	began := 0
	begin := func() error { began++; return nil }

	busy, err := (&Rollout{Reader: reader}).Admit(ctx, label+"-ready", begin)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{label + "-broken", label + "-upgrading"}; !slices.Equal(busy, want) || began != 0 {
		t.Errorf("max 1: busy %v, began %d; want %v and not begun", busy, began, want)
	}
	busy, err = (&Rollout{Reader: reader, MaxUnavailable: 3}).Admit(ctx, label+"-ready", begin)
	if err != nil || busy != nil || began != 1 {
		t.Errorf("max 3: busy %v, began %d, %v; want admitted", busy, began, err)
	}
	// The instance asking is not counted against itself.
	busy, err = (&Rollout{Reader: reader, MaxUnavailable: 2}).Admit(ctx, label+"-upgrading", begin)
	if err != nil || busy != nil || began != 2 {
		t.Errorf("max 2, asked by an unavailable one: busy %v, began %d, %v; want admitted", busy, began, err)
	}
}

// Ten reconciles asking at once, with room for two: exactly two begin,
// because each admission is persisted before the next one counts.
func TestRolloutAdmitsNoMoreThanItsBoundAtOnce(t *testing.T) {
	c := rolloutClient(t)
	ctx := context.Background()
	label := fmt.Sprintf("rollout-%d", rolloutTests.Add(1))
	var insts []*winnodev1.WindowsInstance
	for i := range 10 {
		insts = append(insts, rolloutInstance(t, c, label, fmt.Sprintf("%s-%d", label, i), winnodev1.PhaseReady, true))
	}
	r := &Rollout{Reader: labelledReader{Reader: c, label: label}, MaxUnavailable: 2}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for _, inst := range insts {
		wg.Go(func() {
			busy, err := r.Admit(ctx, inst.Name, func() error {
				inst.Status.Phase = winnodev1.PhaseUpgrading
				return c.Status().Update(ctx, inst)
			})
			if err != nil {
				t.Error(err)
			}
			if busy == nil {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 2 {
		t.Errorf("%d upgrades admitted at once, want 2", n)
	}
}
