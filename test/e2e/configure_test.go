package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller/sources"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// phaseRecorder watches WindowsInstances and records each one's phases in
// the order the API server reported them.
type phaseRecorder struct {
	mu     sync.Mutex
	phases map[string][]winnodev1.Phase
	// timeline is every phase change of every instance, in the order the
	// API server wrote them.
	timeline []phaseChange
	stop     func()
}

type phaseChange struct {
	instance string
	phase    winnodev1.Phase
}

func (w *world) recordPhases(t testing.TB) *phaseRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(w.env.Config, client.Options{Scheme: w.scheme})
	if err != nil {
		t.Fatal(err)
	}
	watch, err := wc.Watch(context.Background(), &winnodev1.WindowsInstanceList{})
	if err != nil {
		t.Fatal(err)
	}
	pr := &phaseRecorder{phases: map[string][]winnodev1.Phase{}, stop: watch.Stop}
	go func() {
		for ev := range watch.ResultChan() {
			inst, ok := ev.Object.(*winnodev1.WindowsInstance)
			if !ok {
				continue
			}
			pr.mu.Lock()
			ph := pr.phases[inst.Name]
			if p := inst.Status.Phase; p != "" && (len(ph) == 0 || ph[len(ph)-1] != p) {
				pr.phases[inst.Name] = append(ph, p)
				pr.timeline = append(pr.timeline, phaseChange{inst.Name, p})
			}
			pr.mu.Unlock()
		}
	}()
	t.Cleanup(watch.Stop)
	return pr
}

// mostAtOnce is the largest number of the named instances that were in
// one of the phases at the same time.
func (pr *phaseRecorder) mostAtOnce(names []string, phases ...winnodev1.Phase) int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	in := map[string]bool{}
	most := 0
	for _, c := range pr.timeline {
		if !slices.Contains(names, c.instance) {
			continue
		}
		in[c.instance] = slices.Contains(phases, c.phase)
		n := 0
		for _, yes := range in {
			if yes {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func (pr *phaseRecorder) of(name string) []winnodev1.Phase {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return slices.Clone(pr.phases[name])
}

// checkNode checks what a configured Windows node carries.
func (w *world) checkNode(t testing.TB, inst *winnodev1.WindowsInstance, h *winsim.Host) *corev1.Node {
	t.Helper()
	node, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Node of %s: %v", inst.Name, err)
	}
	if want := plan.NodeName(h.Hostname()); node.Name != want {
		t.Errorf("Node name %q, want the host's hostname lower-cased %q", node.Name, want)
	}
	hasTaint := false
	for _, taint := range node.Spec.Taints {
		if taint.Key == "os" && taint.Value == "Windows" && taint.Effect == corev1.TaintEffectNoSchedule {
			hasTaint = true
		}
	}
	if !hasTaint {
		t.Errorf("Node %s lacks taint os=Windows:NoSchedule: %v", node.Name, node.Spec.Taints)
	}
	if _, ok := node.Labels[configure.LabelWorker]; !ok {
		t.Errorf("Node %s lacks label %s: %v", node.Name, configure.LabelWorker, node.Labels)
	}
	if got := node.Annotations[winnodev1.AnnotationVersion]; got != operatorVersion {
		t.Errorf("Node %s annotation %s = %q, want %q", node.Name, winnodev1.AnnotationVersion, got, operatorVersion)
	}
	if got := node.Annotations[winnodev1.AnnotationHostKey]; got == "" || got != inst.Status.HostKey {
		t.Errorf("Node %s annotation %s = %q, want the pinned key %q", node.Name, winnodev1.AnnotationHostKey, got, inst.Status.HostKey)
	}
	if node.Spec.Unschedulable {
		t.Errorf("Node %s is still cordoned", node.Name)
	}
	if inst.Status.HostKeyFingerprint != h.Fingerprint() {
		t.Errorf("pinned host key %s, the host's is %s", inst.Status.HostKeyFingerprint, h.Fingerprint())
	}
	w.checkJoinCredentialsGone(t, inst.Name, inst.Status)
	if inst.Status.Version != operatorVersion {
		t.Errorf("status.version %q, want %q", inst.Status.Version, operatorVersion)
	}
	return node
}

// events lists the events about an object.
func (w *world) events(t testing.TB, namespace, name string) []corev1.Event {
	t.Helper()
	list, err := w.kube.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// eventReasons lists the reasons of the events about an object.
func (w *world) eventReasons(t testing.TB, namespace, name string) []string {
	t.Helper()
	var out []string
	for _, e := range w.events(t, namespace, name) {
		out = append(out, e.Reason)
	}
	return out
}

// eventMessages lists the messages of the events with reason about an object.
func (w *world) eventMessages(t testing.TB, namespace, name, reason string) []string {
	t.Helper()
	var out []string
	for _, e := range w.events(t, namespace, name) {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// setEntries writes the windows-instances ConfigMap's entries.
func (w *world) setEntries(t testing.TB, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	cms := w.kube.CoreV1().ConfigMaps(Namespace)
	cm, err := cms.Get(ctx, inventory.InstancesConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: inventory.InstancesConfigMap, Namespace: Namespace}, Data: data}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func entry(h *winsim.Host) string {
	return fmt.Sprintf("username=%s\nport=%d", h.User(), h.Port())
}

// The BYOH workflow end to end, on three hosts listed in the
// windows-instances ConfigMap:
//   - three Ready Windows nodes (taint, label, annotations), phases
//     Pending → Configuring → Ready, events;
//   - reconciling them again (a new operator process) moves no bytes and
//     restarts no service;
//   - an entry removed: the Node drained (a bound pod evicted), services
//     and files gone from the host, Node deleted, token gone;
//   - bad entries: one event each, while the good entries (the removed host
//     listed again among them) are configured.
func TestConfigMapHosts(t *testing.T) { eachAPIServer(t, testConfigMapHosts) }

func testConfigMapHosts(t *testing.T, w *world) {
	pr := w.recordPhases(t)
	hosts := []*winsim.Host{w.newHost(t), w.newHost(t), w.newHost(t)}
	op := w.startOperator(t, operatorOptions{})
	data := map[string]string{}
	var names []string
	for _, h := range hosts {
		data[h.IP()] = entry(h)
		names = append(names, inventory.InstanceName(h.IP()))
	}
	t.Cleanup(func() {
		// After the operator has stopped: drop the instances without it.
		_ = w.kube.CoreV1().ConfigMaps(Namespace).Delete(context.Background(), inventory.InstancesConfigMap, metav1.DeleteOptions{})
		for _, name := range names {
			w.forget(name)
		}
	})
	w.setEntries(t, data)

	for i, name := range names {
		inst := w.waitReady(t, name, 3*time.Minute)
		w.checkNode(t, inst, hosts[i])
		phases := pr.waitEndsWith(t, name, winnodev1.PhaseReady)
		if !slices.Equal(phases, []winnodev1.Phase{winnodev1.PhasePending, winnodev1.PhaseConfiguring, winnodev1.PhaseReady}) {
			t.Errorf("%s went through phases %v, want Pending, Configuring, Ready", name, phases)
		}
		w.waitEvents(t, metav1.NamespaceDefault, name, winnodev1.ReasonHostKeyPinned, winnodev1.ReasonPlanApplied, winnodev1.ReasonNodeReady)
		for _, c := range []string{winnodev1.ConditionReachable, winnodev1.ConditionConfigured, winnodev1.ConditionNodeReady} {
			if !isTrue(inst, c) {
				t.Errorf("%s: condition %s not True: %s", name, c, conditionSummary(inst.Status.Conditions))
			}
		}
	}
	if op.uploaded.Load() == 0 {
		t.Error("the operator reports no bytes uploaded for three new hosts")
	}
	checkCompressedTransfer(t, w, hosts, op.uploaded.Load())

	parent := t
	t.Run("reconcile again moves nothing", func(t *testing.T) {
		pids := map[string]map[string]int{}
		for _, h := range hosts {
			waitStableServices(t, h)
			pids[h.Hostname()] = servicePIDs(t, h)
		}
		metricBefore := uploadedMetric(t)
		op.stop()
		op = w.startOperator(parent, operatorOptions{}) // runs until the whole test ends
		testkit.Eventually(t, time.Minute, "the new operator to check the three Ready instances", func() (bool, string) {
			return op.checked.Load() >= 3, fmt.Sprintf("%d checked", op.checked.Load())
		})
		if n := op.uploaded.Load(); n != 0 {
			t.Errorf("reconciling Ready instances uploaded %d bytes, want 0", n)
		}
		if d := uploadedMetric(t) - metricBefore; d != 0 {
			t.Errorf("winnode_bytes_uploaded_total grew by %v", d)
		}
		for i, h := range hosts {
			if got := servicePIDs(t, h); !maps2Equal(got, pids[h.Hostname()]) {
				t.Errorf("host %s: service processes changed from %v to %v: a service was restarted", h.Hostname(), pids[h.Hostname()], got)
			}
			if inst := w.get(t, names[i]); inst.Status.Phase != winnodev1.PhaseReady {
				t.Errorf("%s is %s after the no-op reconcile", names[i], inst.Status.Phase)
			}
		}
	})

	t.Run("entry removed", func(t *testing.T) {
		gone := w.get(t, names[0])
		pod := w.podOn(t, gone.Status.NodeName)
		delete(data, hosts[0].IP())
		w.setEntries(t, data)
		w.waitGone(t, names[0], 2*time.Minute)
		w.checkDeconfigured(t, gone, hosts[0], pod)
		for _, name := range names[1:] {
			if inst := w.get(t, name); inst.Status.Phase != winnodev1.PhaseReady {
				t.Errorf("%s is %s after another entry was removed", name, inst.Status.Phase)
			}
		}
	})

	t.Run("bad entries", func(t *testing.T) {
		bad := map[string]string{
			"bad_host": "username=Administrator",
			"10.9.9.1": "",
			"10.9.9.2": "username=",
			"10.9.9.3": "username=admin;rm",
			"10.9.9.4": "username=Administrator\nport=0",
			"10.9.9.5": "username=Administrator\nport=http",
			"10.9.9.6": "user=Administrator",
			"10.9.9.7": "username=Administrator\ncolor=blue",
			"10.9.9.8": "username=Administrator\nusername=Guest",
		}
		for k, v := range bad {
			data[k] = v
		}
		data[hosts[0].IP()] = entry(hosts[0]) // listed again
		w.setEntries(t, data)
		testkit.Eventually(t, time.Minute, "an InvalidEntry event for each bad entry", func() (bool, string) {
			msgs := w.eventMessages(t, Namespace, inventory.InstancesConfigMap, sources.EventReasonInvalidEntry)
			var missing []string
			for k := range bad {
				found := false
				for _, m := range msgs {
					if strings.Contains(m, k) {
						found = true
					}
				}
				if !found {
					missing = append(missing, k)
				}
			}
			return len(missing) == 0, fmt.Sprintf("no event names %v (events: %v)", missing, msgs)
		})
		inst := w.waitReady(t, names[0], 3*time.Minute)
		w.checkNode(t, inst, hosts[0])
		for _, name := range names[1:] {
			if inst := w.get(t, name); inst.Status.Phase != winnodev1.PhaseReady {
				t.Errorf("%s is %s beside bad entries", name, inst.Status.Phase)
			}
		}
		var list winnodev1.WindowsInstanceList
		if err := w.client.List(context.Background(), &list, client.MatchingLabels{winnodev1.LabelSourceKind: string(winnodev1.SourceConfigMap)}); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 3 {
			var got []string
			for _, i := range list.Items {
				got = append(got, i.Spec.Address)
			}
			t.Errorf("instances from the ConfigMap: %v, want the three good hosts only", got)
		}
	})
}

// uploadedMetric reads winnode_bytes_uploaded_total from the operator's
// metrics registry.
func uploadedMetric(t testing.TB) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "winnode_bytes_uploaded_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no metric winnode_bytes_uploaded_total")
	return 0
}

// metricValue reads the counter or gauge name with labels from the
// operator's metrics registry (0 when that series does not exist yet).
func metricValue(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue series
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func isTrue(inst *winnodev1.WindowsInstance, typ string) bool {
	for _, c := range inst.Status.Conditions {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func maps2Equal(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// waitStableServices waits until kubelet and kube-proxy run and their
// processes have not changed for two seconds (kube-proxy restarts until the
// kubelet has written its kubeconfig).
func waitStableServices(t testing.TB, h *winsim.Host) {
	t.Helper()
	var last map[string]int
	since := time.Now()
	testkit.Eventually(t, time.Minute, "services on "+h.Hostname()+" to run steadily", func() (bool, string) {
		cur := map[string]int{}
		for _, name := range []string{"kubelet", "kube-proxy"} {
			svc, err := h.Services().Get(name)
			if err != nil || svc.Status.State != "Running" {
				last = nil
				return false, fmt.Sprintf("%s: %v %v", name, svc.Status.State, err)
			}
			cur[name] = svc.Status.PID
		}
		if !maps2Equal(cur, last) {
			last, since = cur, time.Now()
			return false, fmt.Sprintf("processes %v", cur)
		}
		return time.Since(since) > 2*time.Second, fmt.Sprintf("processes %v", cur)
	})
}
