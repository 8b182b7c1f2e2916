package instance

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"golang.org/x/crypto/ssh"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/identity"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// What keeps the cost of a fleet's retries flat (docs/performance.md),
// against the real API server: the conflict checks' index, the reads of
// the cache, one log line per failure.

func TestMain(m *testing.M) { controllertest.Main(m) }

// create creates an instance, removed when the test ends.
func create(t *testing.T, w *controllertest.World, inst *winnodev1.WindowsInstance) *winnodev1.WindowsInstance {
	t.Helper()
	if err := w.Client.Create(context.Background(), inst); err != nil {
		t.Fatalf("creating WindowsInstance %s: %v", inst.Name, err)
	}
	t.Cleanup(func() { w.ForgetInstance(inst.Name) })
	return inst
}

// peerNames are the names of the instances filed under keys, of this
// test only (prefix).
func peerNames(t *testing.T, c client.Reader, prefix string, keys []string) []string {
	t.Helper()
	found, err := peers(context.Background(), c, keys)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, wi := range found {
		if strings.HasPrefix(wi.Name, prefix) {
			names = append(names, wi.Name)
		}
	}
	slices.Sort(names)
	return names
}

// The index finds the instances that can conflict with one, and only
// those, and follows the instances' changes.
func TestPeerIndex(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	const p = "peers-"
	create(t, w, builder.Instance(p+"a").Host("10.77.0.1", "Administrator").Manual().Build())
	create(t, w, builder.Instance(p+"b").Host("10.77.0.1", "Administrator").Port(2222).Manual().Build())
	create(t, w, builder.Instance(p+"c").Host("10.77.0.2", "Administrator").Manual().Build())
	create(t, w, builder.Instance(p+"d").Host("win-d.fleet.test", "Administrator").Port(2022).Manual().Build())
	keyed := create(t, w, builder.Instance(p+"e").Host("10.77.0.3", "Administrator").Manual().Build())
	keyed.Status.HostKey = "ssh-ed25519 AAAApeers"
	if err := w.Client.Status().Update(ctx, keyed); err != nil {
		t.Fatal(err)
	}
	named := builder.Instance(p+"f").Host("10.77.0.4", "Administrator").Manual().Build()
	named.Spec.NodeName = "win-f"
	create(t, w, named)

	mgr := w.StartManager(t, func(mgr ctrl.Manager) error { return IndexPeers(ctx, mgr) })
	cache := mgr.GetClient()
	lookup := func(address string, port int32) []string {
		return peerNames(t, cache, p, inventory.LookupKeys(ctx, inventory.Endpoint{Address: address, Port: port}, nil))
	}
	for _, c := range []struct {
		what string
		got  []string
		want []string
	}{
		{"10.77.0.1:22", lookup("10.77.0.1", 22), []string{p + "a"}},
		{"10.77.0.1:2222", lookup("10.77.0.1", 2222), []string{p + "b"}},
		{"10.77.0.9:22", lookup("10.77.0.9", 22), nil},
		{"a name's port reads the names of that port", lookup("10.77.0.8", 2022), []string{p + "d"}},
		{"host key", peerNames(t, cache, p, []string{identity.HostKeyKey("ssh-ed25519 AAAApeers")}), []string{p + "e"}},
		{"node name", peerNames(t, cache, p, []string{identity.NodeNameKey(winnodev1.ClusterRef{}, "win-f")}), []string{p + "f"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: found %v, want %v", c.what, c.got, c.want)
		}
	}

	moved := &winnodev1.WindowsInstance{}
	if err := w.Client.Get(ctx, client.ObjectKey{Name: p + "a"}, moved); err != nil {
		t.Fatal(err)
	}
	moved.Spec.Address = "10.77.0.2"
	if err := w.Client.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the index to file "+p+"a under its new address", func() (bool, string) {
		old, now := lookup("10.77.0.1", 22), lookup("10.77.0.2", 22)
		return len(old) == 0 && slices.Equal(now, []string{p + "a", p + "c"}), fmt.Sprintf("10.77.0.1: %v, 10.77.0.2: %v", old, now)
	})
}

// countingClient is a client of the API server whose GETs of
// WindowsInstances are counted.
func countingClient(t *testing.T, cfg *rest.Config) (client.Client, *atomic.Int64) {
	t.Helper()
	gets := &atomic.Int64{}
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/windowsinstances") {
				gets.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	c, err := client.New(counted, client.Options{Scheme: controllertest.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, gets
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// snapshot is a cache that stays behind: it holds one old version.
type snapshot struct {
	client.Reader
	obj *winnodev1.WindowsInstance
}

func (s snapshot) Get(_ context.Context, _ client.ObjectKey, o client.Object, _ ...client.GetOption) error {
	s.obj.DeepCopyInto(o.(*winnodev1.WindowsInstance))
	return nil
}

// A pass reads the cache when it holds the last version seen, and the API
// server when the cache is behind it or another writer's version is new.
func TestFreshReads(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	inst := create(t, w, builder.Instance("fresh-a").Host("10.78.0.1", "Administrator").Manual().Build())
	mgr := w.StartManager(t, func(ctrl.Manager) error { return nil })
	live, gets := countingClient(t, w.Env.Config)
	reads := newFreshReads(mgr.GetClient(), live)
	key := client.ObjectKeyFromObject(inst)
	cachedAt := func(rv string) {
		testkit.Eventually(t, 30*time.Second, "the cache to hold version "+rv, func() (bool, string) {
			var c winnodev1.WindowsInstance
			err := mgr.GetClient().Get(ctx, key, &c)
			return err == nil && c.ResourceVersion == rv, fmt.Sprintf("%s %v", c.ResourceVersion, err)
		})
	}
	read := func(what string, wantRV string, wantGets int64) {
		t.Helper()
		gets.Store(0)
		var got winnodev1.WindowsInstance
		if err := reads.get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != wantRV || gets.Load() != wantGets {
			t.Errorf("%s: read version %s with %d GETs of the API server, want %s with %d", what, got.ResourceVersion, gets.Load(), wantRV, wantGets)
		}
	}
	cachedAt(inst.ResourceVersion)
	read("first read", inst.ResourceVersion, 0)
	read("again, nothing written", inst.ResourceVersion, 0)

	inst.Labels = map[string]string{"changed": "by-someone-else"}
	if err := w.Client.Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	cachedAt(inst.ResourceVersion)
	read("another writer's version in the cache", inst.ResourceVersion, 1)
	read("that version known", inst.ResourceVersion, 0)

	old := inst.DeepCopy()
	inst.Labels["changed"] = "by-this-reconciler"
	if err := w.Client.Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	behind := newFreshReads(snapshot{obj: old}, live)
	behind.saw(inst)
	gets.Store(0)
	var got winnodev1.WindowsInstance
	if err := behind.get(ctx, key, &got); err != nil || got.ResourceVersion != inst.ResourceVersion || gets.Load() != 1 {
		t.Errorf("a cache behind the last write: read version %s (%v) with %d GETs, want %s with 1", got.ResourceVersion, err, gets.Load(), inst.ResourceVersion)
	}
}

// logLines collects the lines logged about one instance.
type logLines struct {
	mu    sync.Mutex
	name  string
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		line := prefix + " " + args
		if strings.Contains(line, l.name) {
			l.mu.Lock()
			l.lines = append(l.lines, line)
			l.mu.Unlock()
		}
	}, funcr.Options{Verbosity: 0})
}

func (l *logLines) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	l.lines = nil
	return lines
}

// An unreachable host's retries read the cache only, write nothing, and
// log one line each.
func TestUnreachableRetries(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	inst := create(t, w, builder.Instance("unreachable-a").Host("127.0.0.1", "Administrator").Port(1).Manual().Build())
	live, gets := countingClient(t, w.Env.Config)
	kube, err := kubernetes.NewForConfig(w.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	key := fixture.NewKey(t)
	var failures atomic.Int64
	logs := &logLines{name: inst.Name}
	mgr := w.StartManagerLogged(t, w.Env.Config, logs.logger(), func(mgr ctrl.Manager) error {
		return (&Reconciler{
			Client: mgr.GetClient(), Reader: live, Kube: kube,
			Signer:    func(context.Context) (ssh.Signer, error) { return key.Signer, nil },
			Addresses: inventory.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
			RetryMax:  time.Second, MaxConcurrentReconciles: 1,
			SSHFailed: func(string) { failures.Add(1) },
		}).SetupWithManager(mgr)
	})
	var stored winnodev1.WindowsInstance
	testkit.Eventually(t, time.Minute, "two failed passes, the last one in the cache", func() (bool, string) {
		if err := w.Client.Get(ctx, client.ObjectKeyFromObject(inst), &stored); err != nil {
			return false, err.Error()
		}
		var cached winnodev1.WindowsInstance
		if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(inst), &cached); err != nil {
			return false, err.Error()
		}
		return failures.Load() >= 2 && stored.Status.Phase == winnodev1.PhaseFailed && cached.ResourceVersion == stored.ResourceVersion,
			fmt.Sprintf("%d failures, phase %s, cache at %s, stored %s", failures.Load(), stored.Status.Phase, cached.ResourceVersion, stored.ResourceVersion)
	})
	gets.Store(0)
	logs.take()
	from := failures.Load()
	testkit.Eventually(t, time.Minute, "three more retries", func() (bool, string) {
		return failures.Load() >= from+3, fmt.Sprintf("%d failures", failures.Load()-from)
	})
	// The retry in progress logs its line when it ends.
	testkit.Eventually(t, 30*time.Second, "one log line for each retry", func() (bool, string) {
		n := logs.count()
		return n >= 3, fmt.Sprintf("%d lines", n)
	})
	lines := logs.take()
	for _, l := range lines {
		if !strings.Contains(l, "configuration pass failed; retrying") || !strings.Contains(l, winnodev1.ReasonUnreachable) {
			t.Errorf("a retry logged a line other than its one failure line: %s", l)
		}
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("retries that wrote nothing read the API server %d times; they read the cache", n)
	}
	var after winnodev1.WindowsInstance
	if err := w.Client.Get(ctx, client.ObjectKeyFromObject(inst), &after); err != nil || after.ResourceVersion != stored.ResourceVersion {
		t.Errorf("retries of a host still down wrote the instance: version %s, was %s (%v)", after.ResourceVersion, stored.ResourceVersion, err)
	}
}
