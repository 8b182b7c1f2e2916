package e2e

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// A no-op check of a Ready host costs one SSH connection running one
// program (the agent's info) in one session, moves no payload byte, and
// writes nothing to the API server: counted on the simulated host's SSH
// server and in the real API server's audit log.
func TestNoopCheckIsOneExecAndNoWrite(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "noop-cost", h)
	w.waitReady(t, "noop-cost", 3*time.Minute)
	// A Ready node's services may still be restarting once (flanneld and
	// kube-proxy until the kubelet's kubeconfig exists); a check then
	// rightly records ServiceNotRunning, a write this test is not about.
	waitStableServices(t, h)
	op.stop()

	before := h.Counters()
	since := time.Now()
	op = w.startOperator(t, operatorOptions{})
	testkit.Eventually(t, time.Minute, "the Ready host to be checked", func() (bool, string) {
		return op.checked.Load() >= 1, fmt.Sprintf("%d checks", op.checked.Load())
	})
	op.stop()
	got := h.Counters().Sub(before)
	if got.Connections != 1 || got.Sessions != 1 || got.Execs != 1 || got.SFTP != 0 {
		t.Errorf("a no-op check cost %d connections, %d sessions (%d execs, %d SFTP), want one connection running one program",
			got.Connections, got.Sessions, got.Execs, got.SFTP)
	}
	if n := op.uploaded.Load(); n != 0 {
		t.Errorf("a no-op check uploaded %d bytes", n)
	}
	writes, err := w.env.Writes(operatorUser, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, wr := range writes {
		t.Errorf("a no-op check wrote to the API server: %s", wr)
	}
	if inst := w.get(t, "noop-cost"); inst.Status.Phase != winnodev1.PhaseReady {
		t.Errorf("phase %s after the check", inst.Status.Phase)
	}
}

// An upgrade that waits for its turn in the rollout looks again without
// asking its host anything and without rewriting its status: a Ready node
// waits while another, down after it joined, holds the one place
// (--max-unavailable 1); over several looks, its host sees no SSH
// connection and the API server no write of its status.
func TestWaitingUpgradeCostsNoSSHNorWrite(t *testing.T) {
	w := getWorld(t)
	down, waiting := w.newHost(t), w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "wait-down", down)
	w.instanceFor(t, "wait-ready", waiting)
	w.waitReady(t, "wait-down", 3*time.Minute)
	w.waitReady(t, "wait-ready", 3*time.Minute)
	op.stop()

	// The first host goes down; the operator finds it so (Failed after it
	// joined: out of service for the rollout).
	_ = down.Close()
	op = w.startOperator(t, operatorOptions{})
	testkit.Eventually(t, 2*time.Minute, "wait-down to be Failed", func() (bool, string) {
		inst := w.get(t, "wait-down")
		return inst.Status.Phase == winnodev1.PhaseFailed, string(inst.Status.Phase)
	})
	op.stop()

	// A new kubelet: wait-ready's upgrade restarts services and must wait.
	dir := t.TempDir()
	m, err := simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t), AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, Build: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	op = w.startOperator(t, operatorOptions{payloadDir: dir, payload: m, maxUnavailable: 1})
	testkit.Eventually(t, 2*time.Minute, "wait-ready to wait for its turn", func() (bool, string) {
		return op.waited.Load() >= 1, fmt.Sprintf("%d looks", op.waited.Load())
	})
	before, since, looks := waiting.Counters(), time.Now(), op.waited.Load()
	testkit.Eventually(t, 2*time.Minute, "wait-ready to look for its turn 3 times more", func() (bool, string) {
		return op.waited.Load() >= looks+3, fmt.Sprintf("%d looks", op.waited.Load()-looks)
	})
	op.stop()
	if got := waiting.Counters().Sub(before); got.Connections != 0 || got.Sessions != 0 {
		t.Errorf("%d looks for a turn opened %d SSH connections (%d sessions) to the waiting host, want none",
			op.waited.Load()-looks, got.Connections, got.Sessions)
	}
	writes, err := w.env.Writes(operatorUser, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, wr := range writes {
		if wr.Name == "wait-ready" {
			t.Errorf("a look for a turn wrote to the API server: %s", wr)
		}
	}
	inst := w.get(t, "wait-ready")
	if c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionConfigured); c == nil || c.Reason != winnodev1.ReasonUpgradeWaiting || !strings.Contains(c.Message, "wait-down") {
		t.Errorf("wait-ready's condition Configured %+v, want UpgradeWaiting naming wait-down", c)
	}
}

// A host that stays down is retried with backoff, and each retry that
// fails as the last one did writes nothing: not its status (unchanged),
// not another Warning event (the first one says it).
func TestRetriesOfADownHostWriteNothing(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	_ = h.Close()
	var attempts atomic.Int64
	op := w.startOperator(t, operatorOptions{afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if inst.Name == "down-retries" && step == configure.StepConnect {
			attempts.Add(1)
		}
	}})
	w.instanceFor(t, "down-retries", h)
	testkit.Eventually(t, time.Minute, "down-retries to be Failed", func() (bool, string) {
		inst := w.get(t, "down-retries")
		return inst.Status.Phase == winnodev1.PhaseFailed && inst.Status.LastError != "", string(inst.Status.Phase)
	})
	since, first := time.Now(), attempts.Load()
	testkit.Eventually(t, time.Minute, "3 more attempts to connect", func() (bool, string) {
		return attempts.Load() >= first+3, fmt.Sprintf("%d attempts", attempts.Load()-first)
	})
	op.stop()
	writes, err := w.env.Writes(operatorUser, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, wr := range writes {
		t.Errorf("a retry that failed as before wrote to the API server: %s", wr)
	}
}
