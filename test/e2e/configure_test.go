package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winsim"
)

// phaseRecorder watches WindowsInstances and records each one's phases in
// the order the API server reported them.
type phaseRecorder struct {
	mu     sync.Mutex
	phases map[string][]winnodev1.Phase
	stop   func()
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
			}
			pr.mu.Unlock()
		}
	}()
	t.Cleanup(watch.Stop)
	return pr
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
	if _, ok := node.Labels[controller.LabelWorker]; !ok {
		t.Errorf("Node %s lacks label %s: %v", node.Name, controller.LabelWorker, node.Labels)
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
	if inst.Status.BootstrapTokenID != "" || len(w.instanceTokens(t, inst.Name)) != 0 {
		t.Errorf("instance %s still has a bootstrap token (status %q, %d Secrets)", inst.Name, inst.Status.BootstrapTokenID, len(w.instanceTokens(t, inst.Name)))
	}
	if inst.Status.Version != operatorVersion {
		t.Errorf("status.version %q, want %q", inst.Status.Version, operatorVersion)
	}
	return node
}

// eventReasons lists the reasons of the events about an instance.
func (w *world) eventReasons(t testing.TB, name string) []string {
	t.Helper()
	list, err := w.kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason)
	}
	return out
}

// Three hosts become three Ready Windows nodes; reconciling them again
// moves no bytes and restarts no service.
func TestThreeHostsBecomeReadyNodesAndStayUntouched(t *testing.T) {
	w := getWorld(t)
	pr := w.recordPhases(t)
	hosts := []*winsim.Host{w.newHost(t), w.newHost(t), w.newHost(t)}
	op := w.startOperator(t, operatorOptions{})
	var names []string
	for i, h := range hosts {
		name := fmt.Sprintf("three-%d", i)
		names = append(names, name)
		w.instanceFor(t, name, h)
	}
	for i, name := range names {
		inst := w.waitReady(t, name, 3*time.Minute)
		w.checkNode(t, inst, hosts[i])
		phases := pr.of(name)
		if !slices.Equal(phases, []winnodev1.Phase{winnodev1.PhasePending, winnodev1.PhaseConfiguring, winnodev1.PhaseReady}) {
			t.Errorf("%s went through phases %v, want Pending, Configuring, Ready", name, phases)
		}
		reasons := w.eventReasons(t, name)
		for _, want := range []string{winnodev1.ReasonHostKeyPinned, winnodev1.ReasonPlanApplied, winnodev1.ReasonNodeReady} {
			if !slices.Contains(reasons, want) {
				t.Errorf("events of %s: %v lack %s", name, reasons, want)
			}
		}
		for _, c := range []string{winnodev1.ConditionReachable, winnodev1.ConditionConfigured, winnodev1.ConditionNodeReady} {
			if !isTrue(inst, c) {
				t.Errorf("%s: condition %s not True: %s", name, c, conditionSummary(inst.Status.Conditions))
			}
		}
	}
	if op.uploaded.Load() == 0 {
		t.Error("the operator reports no bytes uploaded for three new hosts")
	}

	// Reconcile again: a new operator process reconciles every instance.
	pids := map[string]map[string]int{}
	for _, h := range hosts {
		waitStableServices(t, h)
		pids[h.Hostname()] = servicePIDs(t, h)
	}
	op.stop()
	op2 := w.startOperator(t, operatorOptions{})
	eventually(t, time.Minute, "the new operator to check the three Ready instances", func() (bool, string) {
		return op2.checked.Load() >= 3, fmt.Sprintf("%d checked", op2.checked.Load())
	})
	if n := op2.uploaded.Load(); n != 0 {
		t.Errorf("reconciling Ready instances uploaded %d bytes, want 0", n)
	}
	for i, h := range hosts {
		if got := servicePIDs(t, h); !maps2Equal(got, pids[h.Hostname()]) {
			t.Errorf("host %s: service processes changed from %v to %v: a service was restarted", h.Hostname(), pids[h.Hostname()], got)
		}
		if inst := w.get(t, names[i]); inst.Status.Phase != winnodev1.PhaseReady {
			t.Errorf("%s is %s after the no-op reconcile", names[i], inst.Status.Phase)
		}
	}
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
	eventually(t, time.Minute, "services on "+h.Hostname()+" to run steadily", func() (bool, string) {
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
