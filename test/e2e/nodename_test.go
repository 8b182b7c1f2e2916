package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// The node name is only the hostname a host reports. A second host cloned
// from a configured one (same hostname) must not take over the first
// host's Node: NodeNameConflict, and the Node keeps its labels,
// annotations and schedulability; deleting the clone's instance does not
// delete it.
func TestClonedHostDoesNotTakeOverANode(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "original", h)
	first := w.waitReady(t, "original", 3*time.Minute)
	if first.Status.NodeUID == "" {
		t.Fatalf("no node UID recorded for the instance's Node %s", first.Status.NodeName)
	}
	before := w.node(t, first.Status.NodeName)

	clone := w.newHostNamed(t, true, h.Hostname())
	w.instanceFor(t, "clone", clone)
	inst := w.waitCondition(t, "clone", winnodev1.ConditionNodeNameConflict, "True", winnodev1.ReasonNodeNameConflict, 2*time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed || !strings.Contains(inst.Status.LastError, "original") {
		t.Errorf("clone: phase %s, lastError %q; want Failed naming WindowsInstance original", inst.Status.Phase, inst.Status.LastError)
	}
	// The failure names its step once (configure.StepError).
	if msg := inst.Status.LastError; !strings.HasPrefix(msg, "step info: node name conflict: host ") || strings.Count(msg, "step ") != 1 {
		t.Errorf("clone: lastError %q; want it to start \"step info: node name conflict: host \" and name the step once", msg)
	}
	w.waitEvents(t, metav1.NamespaceDefault, "clone", winnodev1.ReasonNodeNameConflict)
	if inst.Status.BootstrapTokenID != "" || len(w.instanceTokens(t, "clone")) != 0 {
		t.Errorf("the clone got join credentials for a name it does not own")
	}
	w.nodeUntouched(t, before)

	w.deleteAndWait(t, "clone")
	w.nodeUntouched(t, before)
	if got := w.get(t, "original"); got.Status.Phase != winnodev1.PhaseReady {
		t.Errorf("original: phase %s after the clone came and went, want Ready", got.Status.Phase)
	}
}

// A host whose hostname is the name of a Node winnode did not register (a
// control-plane node here) is refused, and that Node is left untouched,
// also when the instance is deleted.
func TestHostNamedLikeAnotherNode(t *testing.T) {
	w := getWorld(t)
	ctx := context.Background()
	h := w.newHost(t)
	cp := builder.Node(strings.ToLower(h.Hostname())).Labels(map[string]string{"node-role.kubernetes.io/control-plane": ""}).
		Annotations(map[string]string{"example.com/owner": "platform"}).Build()
	created, err := w.kube.CoreV1().Nodes().Create(ctx, cp, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.kube.CoreV1().Nodes().Delete(context.Background(), cp.Name, metav1.DeleteOptions{}) })

	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "liar", h)
	inst := w.waitCondition(t, "liar", winnodev1.ConditionNodeNameConflict, "True", winnodev1.ReasonNodeNameConflict, 2*time.Minute)
	if !strings.Contains(inst.Status.LastError, string(created.UID)) {
		t.Errorf("lastError %q does not name Node %s (uid %s)", inst.Status.LastError, created.Name, created.UID)
	}
	if inst.Status.NodeUID != "" {
		t.Errorf("recorded node UID %s of a Node the host did not register", inst.Status.NodeUID)
	}
	w.nodeUntouched(t, created)
	w.deleteAndWait(t, "liar")
	w.nodeUntouched(t, created)
}

// node reads a Node.
func (w *world) node(t testing.TB, name string) *corev1.Node {
	t.Helper()
	node, err := w.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Node %s: %v", name, err)
	}
	return node
}

// nodeUntouched checks that a Node still exists with the same UID, labels,
// annotations and schedulability as before.
func (w *world) nodeUntouched(t testing.TB, before *corev1.Node) {
	t.Helper()
	now, err := w.kube.CoreV1().Nodes().Get(context.Background(), before.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Node %s: %v (it must not be deleted)", before.Name, err)
	}
	if now.UID != before.UID {
		t.Errorf("Node %s was replaced: uid %s, was %s", now.Name, now.UID, before.UID)
	}
	if now.Spec.Unschedulable != before.Spec.Unschedulable {
		t.Errorf("Node %s: unschedulable %v, was %v", now.Name, now.Spec.Unschedulable, before.Spec.Unschedulable)
	}
	if !sameMap(now.Labels, before.Labels) || !sameMap(now.Annotations, before.Annotations) {
		t.Errorf("Node %s changed:\nlabels %v\n  was %v\nannotations %v\n  was %v", now.Name, now.Labels, before.Labels, now.Annotations, before.Annotations)
	}
}

// sameMap compares two maps, ignoring annotations the control plane keeps
// up to date itself.
func sameMap(a, b map[string]string) bool {
	skip := func(k string) bool {
		return strings.HasPrefix(k, "node.alpha.kubernetes.io/") || strings.HasPrefix(k, "volumes.kubernetes.io/")
	}
	for k, v := range a {
		if !skip(k) && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if !skip(k) && a[k] != v {
			return false
		}
	}
	return true
}

// deleteAndWait deletes an instance through the operator and waits until
// it is gone.
func (w *world) deleteAndWait(t testing.TB, name string) {
	t.Helper()
	if err := w.client.Delete(context.Background(), w.get(t, name)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Minute, "WindowsInstance "+name+" to be gone", func() (bool, string) {
		err := w.client.Get(context.Background(), client.ObjectKey{Name: name}, &winnodev1.WindowsInstance{})
		return apierrors.IsNotFound(err), "still there"
	})
}
