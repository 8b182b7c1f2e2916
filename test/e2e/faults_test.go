package e2e

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// waitCondition waits until the instance has the condition with status and
// reason.
func (w *world) waitCondition(t testing.TB, name, typ string, status, reason string, timeout time.Duration) *winnodev1.WindowsInstance {
	t.Helper()
	var inst *winnodev1.WindowsInstance
	testkit.Eventually(t, timeout, fmt.Sprintf("%s: condition %s=%s (%s)", name, typ, status, reason), func() (bool, string) {
		inst = &winnodev1.WindowsInstance{}
		if err := w.client.Get(context.Background(), client.ObjectKey{Name: name}, inst); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(inst.Status.Conditions, typ)
		state := fmt.Sprintf("phase=%s %s lastError=%q", inst.Status.Phase, conditionSummary(inst.Status.Conditions), inst.Status.LastError)
		return c != nil && string(c.Status) == status && c.Reason == reason, state
	})
	return inst
}

// converged checks the end state after a fault: Ready, one Node for the
// host, no bootstrap token left.
func (w *world) converged(t testing.TB, name string, h *winsim.Host) {
	t.Helper()
	inst := w.waitReady(t, name, 3*time.Minute)
	w.checkNode(t, inst, h)
	if n := w.nodesOfHost(t, h); n != 1 {
		t.Errorf("%d Nodes for host %s, want 1", n, h.Hostname())
	}
	if inst.Status.LastError != "" {
		t.Errorf("lastError %q remains after convergence", inst.Status.LastError)
	}
	if meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch) != nil {
		t.Errorf("condition HostKeyMismatch remains: %s", conditionSummary(inst.Status.Conditions))
	}
}

// The host does not accept the operator's key: a clear condition, then
// convergence once it does.
func TestWrongPrivateKey(t *testing.T) {
	w := getWorld(t)
	h := w.newHostWith(t, false)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "wrong-key", h)
	inst := w.waitCondition(t, "wrong-key", winnodev1.ConditionReachable, "False", winnodev1.ReasonAuthFailed, time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed || inst.Status.LastError == "" {
		t.Errorf("phase %s, lastError %q: want Failed with the reason", inst.Status.Phase, inst.Status.LastError)
	}
	if err := h.AuthorizeKey(w.signer.PublicKey()); err != nil {
		t.Fatal(err)
	}
	w.converged(t, "wrong-key", h)
}

// The host is down: Unreachable, then convergence once it is up.
func TestHostDown(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	state := h.StateDir()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "down", h)
	inst := w.waitCondition(t, "down", winnodev1.ConditionReachable, "False", winnodev1.ReasonUnreachable, time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed {
		t.Errorf("phase %s, want Failed", inst.Status.Phase)
	}
	// The same host (same state: address, port, key) comes up.
	h2 := w.bootAgain(t, state)
	w.converged(t, "down", h2)
}

// bootAgain starts the simulated host kept in state (same address, port and
// host key) after it was closed.
func (w *world) bootAgain(t testing.TB, state string) *winsim.Host {
	t.Helper()
	h, err := winsim.New(winsim.Options{StateDir: state, StandinBinary: w.standin, BootDelay: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(newTestWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// The host key changes on a Ready host: HostKeyMismatch, no work until an
// administrator clears status.hostKey, then the new key is pinned.
func TestHostKeyChanged(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "rekeyed", h)
	before := w.waitReady(t, "rekeyed", 3*time.Minute)
	if _, err := h.RotateHostKey(); err != nil {
		t.Fatal(err)
	}
	op.stop() // a new operator reconciles every instance at start
	op = w.startOperator(t, operatorOptions{})
	inst := w.waitCondition(t, "rekeyed", winnodev1.ConditionHostKeyMismatch, "True", winnodev1.ReasonHostKeyChanged, time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed || inst.Status.HostKey != before.Status.HostKey {
		t.Errorf("phase %s, pinned key changed to %q: want Failed with the old key pinned", inst.Status.Phase, inst.Status.HostKey)
	}
	// Blocked: another operator start looks at it and does nothing with it.
	op.stop()
	looked := make(chan struct{})
	var once sync.Once
	op = w.startOperator(t, operatorOptions{afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if inst.Name == "rekeyed" && step == configure.StepBlocked {
			once.Do(func() { close(looked) })
		}
	}})
	select {
	case <-looked:
	case <-time.After(time.Minute):
		t.Fatalf("the restarted operator did not find the instance blocked within a minute: %s", conditionSummary(w.get(t, "rekeyed").Status.Conditions))
	}
	if got := w.get(t, "rekeyed"); got.Status.HostKey != before.Status.HostKey || !isTrue(got, winnodev1.ConditionHostKeyMismatch) {
		t.Errorf("the mismatch was resolved without an administrator: %s", conditionSummary(got.Status.Conditions))
	}
	// The administrator accepts the new key, as the condition says.
	cur := w.get(t, "rekeyed")
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Status.HostKey = ""
	if err := w.client.Status().Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
	w.converged(t, "rekeyed", h)
	_ = op
}

// The host reboots in the middle of its configuration (during the sync,
// and again while the kubelet joins): convergence, one Node.
func TestHostRebootedMidConfiguration(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	var once sync.Map
	w.startOperator(t, operatorOptions{afterStep: func(op *operator, inst *winnodev1.WindowsInstance, step string) {
		if inst.Name != "rebooted" || (step != configure.StepSync && step != configure.StepJoin) {
			return
		}
		if _, done := once.LoadOrStore(step, true); done {
			return
		}
		if step == configure.StepSync {
			// Down before the upload: the sync fails and is retried.
			if err := h.Reboot(); err != nil {
				t.Errorf("reboot: %v", err)
			}
			return
		}
		go func() { _ = h.Reboot() }() // while the kubelet bootstraps
	}})
	w.instanceFor(t, "rebooted", h)
	w.converged(t, "rebooted", h)
}

// The operator is stopped right at each step of a configuration, then
// started again: the configuration resumes and converges, with one Node and
// no token left.
func TestOperatorStoppedAtEachStep(t *testing.T) { eachAPIServer(t, testOperatorStoppedAtEachStep) }

func testOperatorStoppedAtEachStep(t *testing.T, w *world) {
	h := w.newHost(t)
	w.instanceFor(t, "restarted", h)
	steps := []string{configure.StepConnect, configure.StepInfo, configure.StepCredentials, configure.StepPlan,
		configure.StepSync, configure.StepApply, configure.StepJoin, configure.StepFinish}
	for _, stopAt := range steps {
		stopped := make(chan struct{})
		var once sync.Once
		op := w.startOperator(t, operatorOptions{crash: func(op *operator, inst *winnodev1.WindowsInstance, step string) error {
			if inst.Name != "restarted" || step != stopAt {
				return nil
			}
			once.Do(func() { op.cancel(); close(stopped) })
			return errors.New("operator stopped by the test")
		}})
		select {
		case <-stopped:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the operator never reached step %s (status: %+v)", stopAt, w.get(t, "restarted").Status)
		}
		op.stop()
		if got := w.get(t, "restarted").Status.Step; got != stopAt {
			t.Errorf("stopped at %s, the status says step %s", stopAt, got)
		}
	}
	w.startOperator(t, operatorOptions{})
	w.converged(t, "restarted", h)
}

// A host key on a Node's annotation is never trusted: the node's kubelet
// can write its own Node's annotations, so a compromised node could name a
// key of its choosing there. A new instance for a host that already is a
// node (the old instance deleted without deconfiguring) trusts the host's
// key on first use, not the one on the Node (here an attacker's key, which
// the host does not present: trusting it would be a HostKeyMismatch).
func TestNodeAnnotationHostKeyIsNotTrusted(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "first", h)
	first := w.waitReady(t, "first", 3*time.Minute)
	op.stop()
	// Drop the instance without deconfiguring (its Node stays).
	ctx := context.Background()
	cur := w.get(t, "first")
	cur.Finalizers = nil
	if err := w.client.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := w.client.Delete(ctx, cur); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.kube.CoreV1().Nodes().Delete(context.Background(), first.Status.NodeName, metav1.DeleteOptions{})
	})
	// What a node could write on its own Node: another host's key.
	attacker, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	attackerKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(attacker.PublicKey())))
	node, err := w.kube.CoreV1().Nodes().Get(ctx, first.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Annotations[winnodev1.AnnotationHostKey] = attackerKey
	if _, err := w.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "second", h)
	inst := w.waitCondition(t, "second", winnodev1.ConditionReachable, "True", winnodev1.ReasonConnected, time.Minute)
	if inst.Status.HostKey == attackerKey {
		t.Fatal("the operator pinned the host key written on the Node's annotation")
	}
	if inst.Status.HostKeyFingerprint != h.Fingerprint() {
		t.Errorf("pinned %s, want the host's own key %s (trusted on first use)", inst.Status.HostKeyFingerprint, h.Fingerprint())
	}
}

// A host without a running container runtime whose instance says
// Existing (the host's own containerd): a clear condition telling the
// administrator to install containerd or let winnode manage it; nothing is
// installed.
func TestHostWithoutContainerd(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceWith(t, "no-runtime", h, winnodev1.ContainerRuntimeExisting)
	inst := w.waitCondition(t, "no-runtime", winnodev1.ConditionConfigured, "False", winnodev1.ReasonNoContainerRuntime, time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed || !strings.Contains(inst.Status.LastError, "the host's own containerd must run") ||
		!strings.Contains(inst.Status.LastError, "set spec.containerRuntime to Managed") {
		t.Errorf("phase %s, lastError %q: want Failed, saying to run containerd or switch to Managed", inst.Status.Phase, inst.Status.LastError)
	}
	if len(w.instanceTokens(t, "no-runtime")) != 0 {
		t.Error("a bootstrap token was issued for a host that cannot run a kubelet")
	}
	if _, err := h.Services().Get("kubelet"); err == nil {
		t.Error("a kubelet service was installed on a host without containerd")
	}
}

// A Ready host that goes down: once its Node is NotReady the instance is
// checked at once (not at the next periodic check) and says Unreachable;
// when the host is back, the instance is Ready again with the same Node.
func TestReadyHostGoesDown(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "flaky", h)
	before := w.waitReady(t, "flaky", 3*time.Minute)
	state := h.StateDir()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	// The node lifecycle controller marks the Node NotReady after its grace
	// period (20s in testenv).
	inst := w.waitCondition(t, "flaky", winnodev1.ConditionReachable, "False", winnodev1.ReasonUnreachable, 2*time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed {
		t.Errorf("phase %s, want Failed while the host is down", inst.Status.Phase)
	}
	h2 := w.bootAgain(t, state)
	w.converged(t, "flaky", h2)
	if after := w.get(t, "flaky"); after.Status.NodeName != before.Status.NodeName {
		t.Errorf("node %s became %s", before.Status.NodeName, after.Status.NodeName)
	}
}
