package sources

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestMain(m *testing.M) { controllertest.Main(m) }

var entryKeyRe = regexp.MustCompile(`^entry "([^"]*)"`)

// invalidEntryEvents counts the InvalidEntry events on the ConfigMap by entry
// key; a key reported twice (a second event, or a series) counts twice.
func invalidEntryEvents(ctx context.Context, w *controllertest.World) (map[string]int, error) {
	evs, err := w.EventsFor(ctx, w.Namespace, inventory.InstancesConfigMap, EventReasonInvalidEntry)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, e := range evs {
		m := entryKeyRe.FindStringSubmatch(e.Note)
		if m == nil {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		counts[m[1]] += n
	}
	return counts, nil
}

func instance(ctx context.Context, w *controllertest.World, address string) (*winnodev1.WindowsInstance, error) {
	var wi winnodev1.WindowsInstance
	err := w.Client.Get(ctx, client.ObjectKey{Name: inventory.InstanceName(address)}, &wi)
	return &wi, err
}

func TestSourcesReconciler(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	w.StartManager(t, func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Namespace: w.Namespace, Recorder: mgr.GetEventRecorder("winnode-sources")}).SetupWithManager(mgr)
	})
	good := map[string]string{
		"10.250.0.1":         "username=Administrator",
		"10.250.0.2":         "username=admin\nport=2222",
		"src-a.winnode.test": "username=core@corp.example.com",
	}
	bad := map[string]string{
		"10.250.0.256":       "username=a",             // bad IPv4
		"0.0.0.0":            "username=a",             // not a host
		"bad_host.test":      "username=a",             // not a DNS name
		"10.250.0.10":        "port=22",                // missing username
		"10.250.0.11":        "username=John Smith",    // space
		"10.250.0.12":        `username=CORP\admin`,    // backslash
		"10.250.0.13":        `username=a"b`,           // quote
		"10.250.0.14":        "username=a\nusername=b", // two usernames
		"10.250.0.15":        "username=a\npassword=p", // unknown key
		"10.250.0.16":        "username=a\nport=70000", // bad port
		"SRC-A.winnode.test": "username=other",         // duplicate host, other spelling
		"10.250.0.17":        "",                       // empty
	}
	t.Cleanup(func() {
		for _, a := range []string{"10.250.0.1", "10.250.0.2", "src-a.winnode.test", "10.250.0.3", "10.250.0.4"} {
			w.ForgetInstance(inventory.InstanceName(a))
		}
	})

	// IPv6 is not supported: the API server refuses the key before we see it.
	err := w.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: "ipv6-probe"},
		Data:       map[string]string{"fe80::1": "username=a"},
	})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a ConfigMap key with ':' was not refused: %v", err)
	}

	data := map[string]string{}
	for k, v := range good {
		data[k] = v
	}
	for k, v := range bad {
		data[k] = v
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: inventory.InstancesConfigMap}, Data: data}
	if err := w.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}

	// One instance per good entry, labelled, with the finalizer and the spec.
	testkit.Eventually(t, 30*time.Second, "three WindowsInstances for the three good entries", func() (bool, string) {
		var list winnodev1.WindowsInstanceList
		err := w.Client.List(ctx, &list, client.MatchingLabels{winnodev1.LabelSourceNamespace: w.Namespace})
		return err == nil && len(list.Items) == 3, fmt.Sprintf("%d instances (%v)", len(list.Items), err)
	})
	for key, want := range map[string]winnodev1.WindowsInstanceSpec{
		"10.250.0.1":         {Address: "10.250.0.1", Username: "Administrator", Port: 22},
		"10.250.0.2":         {Address: "10.250.0.2", Username: "admin", Port: 2222},
		"src-a.winnode.test": {Address: "src-a.winnode.test", Username: "core@corp.example.com", Port: 22},
	} {
		wi, err := instance(ctx, w, want.Address)
		if err != nil {
			t.Fatalf("instance of %s: %v", key, err)
		}
		want.Source = winnodev1.SourceRef{Kind: winnodev1.SourceConfigMap, Namespace: w.Namespace, Name: inventory.InstancesConfigMap, Key: key}
		if wi.Spec != want {
			t.Errorf("instance of %s: spec %+v, want %+v", key, wi.Spec, want)
		}
		if !slices.Contains(wi.Finalizers, winnodev1.Finalizer) {
			t.Errorf("instance of %s lacks finalizer %s", key, winnodev1.Finalizer)
		}
		if wi.Labels[winnodev1.LabelSourceKind] != "ConfigMap" || wi.Labels[winnodev1.LabelSourceName] != inventory.InstancesConfigMap {
			t.Errorf("instance of %s: labels %v", key, wi.Labels)
		}
	}

	// One Warning event per bad entry, naming the key.
	testkit.Eventually(t, 30*time.Second, "one InvalidEntry event per bad entry", func() (bool, string) {
		counts, err := invalidEntryEvents(ctx, w)
		return err == nil && len(counts) == len(bad), fmt.Sprintf("InvalidEntry events by entry: %v (%v)", counts, err)
	})

	// More reconciles (a ConfigMap edit adds a host) report nothing again.
	cm.Data["10.250.0.3"] = "username=third"
	if err := w.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "instance for the added entry 10.250.0.3", func() (bool, string) {
		_, err := instance(ctx, w, "10.250.0.3")
		return err == nil, fmt.Sprint(err)
	})
	counts, err := invalidEntryEvents(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	for k := range bad {
		if counts[k] != 1 {
			t.Errorf("bad entry %q reported %d times, want once", k, counts[k])
		}
	}

	// A changed port updates the spec; a typo in a good entry keeps its
	// instance untouched (and is reported); a removed entry's instance is
	// deleted (held by its finalizer until deconfigured).
	cm.Data["10.250.0.2"] = "username=admin\nport=2200"
	cm.Data["10.250.0.1"] = "username=Admin istrator"
	delete(cm.Data, "src-a.winnode.test")
	delete(cm.Data, "SRC-A.winnode.test") // else this spelling would name the host still
	if err := w.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "port of 10.250.0.2 updated to 2200", func() (bool, string) {
		wi, err := instance(ctx, w, "10.250.0.2")
		return err == nil && wi.Spec.Port == 2200, fmt.Sprintf("port %d (%v)", wi.Spec.Port, err)
	})
	testkit.Eventually(t, 30*time.Second, "instance of the removed entry src-a.winnode.test being deleted", func() (bool, string) {
		wi, err := instance(ctx, w, "src-a.winnode.test")
		return err == nil && !wi.DeletionTimestamp.IsZero(), fmt.Sprintf("deletion timestamp %v (%v)", wi.DeletionTimestamp, err)
	})
	testkit.Eventually(t, 30*time.Second, "the typo in 10.250.0.1 reported", func() (bool, string) {
		counts, err := invalidEntryEvents(ctx, w)
		return err == nil && counts["10.250.0.1"] == 1, fmt.Sprintf("%d events about 10.250.0.1 (%v)", counts["10.250.0.1"], err)
	})
	if wi, err := instance(ctx, w, "10.250.0.1"); err != nil || !wi.DeletionTimestamp.IsZero() || wi.Spec.Username != "Administrator" {
		t.Errorf("a typo changed or deleted the instance of 10.250.0.1: %+v, %v", wi, err)
	}

	// A host already managed by an instance of another source is not taken over.
	manual := builder.Instance("manual-10-250-0-4").Host("10.250.0.4", "u").Port(22).Manual().Build()
	if err := w.Client.Create(ctx, manual); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ForgetInstance(manual.Name) })
	cm.Data["10.250.0.4"] = "username=u"
	if err := w.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "entry 10.250.0.4 reported as already managed", func() (bool, string) {
		evs, err := w.EventsFor(ctx, w.Namespace, inventory.InstancesConfigMap, EventReasonInvalidEntry)
		for _, e := range evs {
			if strings.Contains(e.Note, `entry "10.250.0.4"`) && strings.Contains(e.Note, "already managed by WindowsInstance manual-10-250-0-4") {
				return true, e.Note
			}
		}
		return false, fmt.Sprintf("%d InvalidEntry events, none about 10.250.0.4 being managed (%v)", len(evs), err)
	})
	if _, err := instance(ctx, w, "10.250.0.4"); !apierrors.IsNotFound(err) {
		t.Errorf("a second instance was created for a host another source manages: %v", err)
	}

	// The ConfigMap deleted: every instance it created is deleted.
	if err := w.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "every instance of the deleted ConfigMap being deleted", func() (bool, string) {
		var list winnodev1.WindowsInstanceList
		if err := w.Client.List(ctx, &list, client.MatchingLabels{winnodev1.LabelSourceNamespace: w.Namespace}); err != nil {
			return false, err.Error()
		}
		for _, wi := range list.Items {
			if wi.DeletionTimestamp.IsZero() {
				return false, "instance " + wi.Name + " not being deleted"
			}
		}
		return true, fmt.Sprintf("%d instances being deleted", len(list.Items))
	})
	var m winnodev1.WindowsInstance
	if err := w.Client.Get(ctx, client.ObjectKey{Name: manual.Name}, &m); err != nil || !m.DeletionTimestamp.IsZero() {
		t.Errorf("the manual instance was touched: %v", err)
	}
}

// TestSourcesTakesOverAHostOnceItsOtherInstanceIsGone: an entry blocked by
// another source's instance of the same host gets its own instance as soon
// as that one is deleted, without any edit of the ConfigMap.
func TestSourcesTakesOverAHostOnceItsOtherInstanceIsGone(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	w.StartManager(t, func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Namespace: w.Namespace, Recorder: mgr.GetEventRecorder("winnode-sources")}).SetupWithManager(mgr)
	})
	const addr = "10.250.1.1"
	manual := builder.Instance("manual-10-250-1-1").Host(addr, "u").Port(22).Manual().Build()
	if err := w.Client.Create(ctx, manual); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ForgetInstance(manual.Name); w.ForgetInstance(inventory.InstanceName(addr)) })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: inventory.InstancesConfigMap}, Data: map[string]string{addr: "username=u"}}
	if err := w.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "entry reported as already managed", func() (bool, string) {
		counts, err := invalidEntryEvents(ctx, w)
		return err == nil && counts[addr] == 1, fmt.Sprintf("%d InvalidEntry events about %s (%v)", counts[addr], addr, err)
	})
	if err := w.Client.Delete(ctx, manual); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the ConfigMap's instance created once the manual one is gone", func() (bool, string) {
		wi, err := instance(ctx, w, addr)
		return err == nil && wi.Spec.Source.Kind == winnodev1.SourceConfigMap, fmt.Sprintf("source %q (%v)", wi.Spec.Source.Kind, err)
	})
}

// TestSourcesUnderGeneratedRBAC runs the sources controller as a user that
// holds only config/rbac/role.yaml: the permissions the markers declare are
// enough for it to create an instance and report a bad entry.
func TestSourcesUnderGeneratedRBAC(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	cfg := w.OperatorConfig(t)
	w.StartManagerAs(t, cfg, func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Namespace: w.Namespace, Recorder: mgr.GetEventRecorder("winnode-sources")}).SetupWithManager(mgr)
	})
	const addr = "10.250.2.1"
	t.Cleanup(func() { w.ForgetInstance(inventory.InstanceName(addr)) })
	if err := w.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: inventory.InstancesConfigMap},
		Data:       map[string]string{addr: "username=u", "10.250.2.300": "username=u"},
	}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the instance created as the operator", func() (bool, string) {
		_, err := instance(ctx, w, addr)
		return err == nil, fmt.Sprint(err)
	})
	testkit.Eventually(t, 30*time.Second, "the bad entry reported as the operator", func() (bool, string) {
		counts, err := invalidEntryEvents(ctx, w)
		return err == nil && counts["10.250.2.300"] == 1, fmt.Sprintf("%d InvalidEntry events about 10.250.2.300 (%v)", counts["10.250.2.300"], err)
	})
}
