package identity

import (
	"errors"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// The names of testenv's API server certificate, and a real cluster's.
var apiNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "api.winnode.test", "*.apps.example.com"}

func TestCheckNodeName(t *testing.T) {
	nodes := map[string]string{"cp-1": "uid-cp", "win-a": "uid-a"}
	facts := NameFacts{APIServerNames: apiNames, NodeUID: func(n string) (string, bool) { uid, ok := nodes[n]; return uid, ok }}
	for _, c := range []struct {
		name   string
		own    string
		reason string // "" when allowed
	}{
		{"win-b", "", ""},
		{"win-a", "uid-a", ""}, // its own Node
		{"win-a", "", NameOfOtherNode},
		{"win-a", "uid-other", NameOfOtherNode},
		{"cp-1", "", NameOfOtherNode}, // a Linux control-plane node
		{"kubernetes", "", NameOfAPIServer},
		{"localhost", "", NameOfAPIServer},
		{"api", "", ""}, // api.winnode.test is; api alone is not
		{"WIN-B", "", NameInvalid},
		{"win_b", "", NameInvalid},
		{"", "", NameInvalid},
		{"a.b", "", NameInvalid},
		{"x234567890123456789012345678901234567890123456789012345678901234", "", NameInvalid}, // 64 characters
	} {
		f := facts
		f.OwnUID = c.own
		err := CheckNodeName(c.name, f)
		var ne *NameError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%q (own %q): %v, want allowed", c.name, c.own, err)
		case c.reason != "" && (!errors.As(err, &ne) || ne.Reason != c.reason):
			t.Errorf("%q (own %q): %v, want reason %s", c.name, c.own, err, c.reason)
		}
	}
	// Without Nodes, only the name itself is checked (the engine decides
	// which Node is the host's by UID or proof).
	if err := CheckNodeName("cp-1", NameFacts{APIServerNames: apiNames}); err != nil {
		t.Errorf("cp-1 without Nodes: %v", err)
	}
}

func TestIsAPIServerName(t *testing.T) {
	for name, want := range map[string]bool{
		"api.winnode.test":        true,
		"API.WINNODE.TEST.":       true,
		"x.apps.example.com":      true,
		"apps.example.com":        false,
		"a.x.apps.example.com":    false, // a wildcard covers one label
		"kubernetes.default.svc":  true,
		"kubernetes.default.svc2": false,
		"win-1":                   false,
	} {
		if got := IsAPIServerName(name, apiNames); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestOwners(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	inst := func(name string, created time.Time, node, uid string) *builder.InstanceBuilder {
		return builder.Instance(name).Created(created).Node(node, uid)
	}
	registered := *inst("registered", t2, "win-a", "uid-1").Build()
	approved := *inst("approved", t2, "win-a", "").ClientCertificate("csr-1", "win-a", false).Build()
	fixed := *inst("fixed", t2, "win-a", "").NameFixed(t1).Build()
	fixedLater := *inst("fixed-later", t0, "win-a", "").NameFixed(t2).Build()
	pending := *inst("pending", t1, "win-a", "").Phase(winnodev1.PhasePending).Build()
	older := *inst("older", t0, "win-a", "").Phase(winnodev1.PhaseConfiguring).Build()
	failedOld := *inst("failed-old", t0, "win-a", "").Phase(winnodev1.PhaseFailed).Build()
	deleting := *inst("deleting", t0, "win-a", "").Deleting().Build()
	other := *inst("other", t0, "win-b", "uid-2").Build()
	capi := *builder.Instance("capi").Created(t0).Build()
	capi.Spec.NodeName = "win-a"
	elsewhere := *inst("elsewhere", t2.Add(time.Hour), "win-a", "uid-3").Build()
	elsewhere.Spec.Cluster = winnodev1.ClusterRef{Namespace: "team-a", Name: "work"}

	for _, c := range []struct {
		name   string
		inst   winnodev1.WindowsInstance
		others []winnodev1.WindowsInstance
		want   string
	}{
		{"a recorded UID beats an approval", approved, []winnodev1.WindowsInstance{registered, approved}, "registered"},
		{"the registered one keeps its name", registered, []winnodev1.WindowsInstance{registered, approved, fixed, older}, ""},
		{"an approval beats a fixed name", fixed, []winnodev1.WindowsInstance{approved, fixed}, "approved"},
		{"a fixed name beats an older newcomer", older, []winnodev1.WindowsInstance{fixed, older}, "fixed"},
		{"the earlier fixed name wins", fixedLater, []winnodev1.WindowsInstance{fixed, fixedLater}, "fixed"},
		{"without claims, the older one", pending, []winnodev1.WindowsInstance{older, pending}, "older"},
		{"a failed instance without claims shadows nobody", pending, []winnodev1.WindowsInstance{failedOld, pending}, ""},
		{"and yields to a pending one", failedOld, []winnodev1.WindowsInstance{failedOld, pending}, "pending"},
		{"an instance being deleted without claims shadows nobody", pending, []winnodev1.WindowsInstance{deleting, pending}, ""},
		{"other names do not count", other, []winnodev1.WindowsInstance{registered, other}, ""},
		{"the computer name winnode assigned is a node name", pending, []winnodev1.WindowsInstance{capi, pending}, "capi"},
		{"no name yet", *builder.Instance("x").Build(), []winnodev1.WindowsInstance{registered}, ""},
		{"a node of another cluster holds no name here", pending, []winnodev1.WindowsInstance{elsewhere, pending}, ""},
		{"nor one of here there", elsewhere, []winnodev1.WindowsInstance{registered, elsewhere}, ""},
	} {
		if got := NodeNameOwner(&c.inst, c.others); got != c.want {
			t.Errorf("%s: owner %q, want %q", c.name, got, c.want)
		}
	}

	all := []winnodev1.WindowsInstance{pending, fixed, approved, registered, other, failedOld}
	if got := OwnerOfName("win-a", all); got == nil || got.Name != "registered" {
		t.Errorf("OwnerOfName(win-a) = %v, want registered", got)
	}
	if got := OwnerOfName("win-c", all); got != nil {
		t.Errorf("OwnerOfName(win-c) = %s, want none", got.Name)
	}
	if got := OwnerOfName("win-a", []winnodev1.WindowsInstance{failedOld}); got != nil {
		t.Errorf("a failed instance without claims owns %s", "win-a")
	}
}

func TestHostKeyAndHostOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA"
	ready := *builder.Instance("ready").Created(t0.Add(time.Hour)).Node("win-a", "uid-1").PinnedHostKey(key).Build()
	newcomer := *builder.Instance("newcomer").Created(t0).Host("win-a.example.com", "Administrator").PinnedHostKey(key).Build()
	stranger := *builder.Instance("stranger").Created(t0).PinnedHostKey("ssh-ed25519 other").Build()
	// A clone's instance, created in the same second as pinner's and first
	// by name, presents the key pinner pinned before it: pinner keeps it.
	pinner := *builder.Instance("key-owner").Created(t0.Add(2 * time.Hour)).PinnedHostKey("ssh-ed25519 pinned").Build()
	clone := *builder.Instance("key-clone").Created(t0.Add(2 * time.Hour)).Build()
	all := []winnodev1.WindowsInstance{ready, newcomer, stranger, pinner, clone}
	for _, c := range []struct {
		inst winnodev1.WindowsInstance
		key  string
		want string
	}{
		{newcomer, key, "ready"},
		{ready, key, ""},
		{stranger, "ssh-ed25519 other", ""},
		{newcomer, "", ""},
		{clone, "ssh-ed25519 pinned", "key-owner"},
		{pinner, "ssh-ed25519 pinned", ""},
	} {
		if got := HostKeyOwner(&c.inst, c.key, all); got != c.want {
			t.Errorf("HostKeyOwner(%s) = %q, want %q", c.inst.Name, got, c.want)
		}
	}
	sameAddress := func(a, b *winnodev1.WindowsInstance) bool { return a.Name != "stranger" && b.Name != "stranger" }
	if got := HostOwner(&newcomer, all, sameAddress); got != "ready" {
		t.Errorf("HostOwner(newcomer) = %q, want ready", got)
	}
	if got := HostOwner(&stranger, all, sameAddress); got != "" {
		t.Errorf("HostOwner(stranger) = %q, want none", got)
	}
	elsewhere := *builder.Instance("elsewhere").Created(t0.Add(2 * time.Hour)).Build()
	elsewhere.Spec.Cluster = winnodev1.ClusterRef{Namespace: "team-a", Name: "work"}
	if got := HostOwner(&elsewhere, all, sameAddress); got != "" {
		t.Errorf("HostOwner(elsewhere) = %q: an address of another cluster's network is another host", got)
	}
}
