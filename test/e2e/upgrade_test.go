package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// A new payload (here: one more file) moves a Ready host through Upgrading
// back to Ready, uploading only what changed and restarting no service whose
// files did not change.
func TestPayloadChangeUpgrades(t *testing.T) {
	w := getWorld(t)
	pr := w.recordPhases(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "upgraded", h)
	ready := w.waitReady(t, "upgraded", 3*time.Minute)
	waitStableServices(t, h)
	pids := servicePIDs(t, h)
	// No service restarts in these upgrades: the node's pods stay.
	pod := w.podOn(t, ready.Status.NodeName)
	op.stop()

	const pad = 3 << 20
	dir := t.TempDir()
	m, err := simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t), AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, PaddingBytes: pad, PaddingSeed: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	op = w.startOperator(t, operatorOptions{payloadDir: dir, payload: m})
	testkit.Eventually(t, 3*time.Minute, "the upgraded host to run the new payload", func() (bool, string) {
		inst := w.get(t, "upgraded")
		return inst.Status.Phase == winnodev1.PhaseReady && hostFileExists(t, h, simpayload.PaddingHostPath),
			fmt.Sprintf("phase %s step %s lastError %q", inst.Status.Phase, inst.Status.Step, inst.Status.LastError)
	})
	inst := w.waitReady(t, "upgraded", time.Minute)
	w.checkNode(t, inst, h)
	pr.waitEndsWith(t, "upgraded", winnodev1.PhaseReady, winnodev1.PhaseUpgrading, winnodev1.PhaseReady)
	if n := op.uploaded.Load(); n < pad || n > pad+64<<10 {
		t.Errorf("the upgrade uploaded %d bytes; want the new %d-byte file and the plan only", n, pad)
	}
	if got := servicePIDs(t, h); !maps.Equal(got, pids) {
		t.Errorf("services restarted by an upgrade that changed none of their files: %v -> %v", pids, got)
	}

	// A new operator version: every host is moved to it (the plan's
	// version changes, nothing else), without uploads beyond the plan and
	// without restarts.
	op.stop()
	const newVersion = "v0.0.1-e2e"
	op = w.startOperator(t, operatorOptions{payloadDir: dir, payload: m, version: newVersion})
	testkit.Eventually(t, 2*time.Minute, "the host to be at the new operator version", func() (bool, string) {
		inst := w.get(t, "upgraded")
		return inst.Status.Phase == winnodev1.PhaseReady && inst.Status.Version == newVersion,
			fmt.Sprintf("phase %s version %s lastError %q", inst.Status.Phase, inst.Status.Version, inst.Status.LastError)
	})
	node, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Annotations[winnodev1.AnnotationVersion]; got != newVersion {
		t.Errorf("Node annotation %s = %q, want %q", winnodev1.AnnotationVersion, got, newVersion)
	}
	if node.Spec.Unschedulable {
		t.Error("the Node is still cordoned after the upgrade")
	}
	if n := op.uploaded.Load(); n > 64<<10 {
		t.Errorf("a version-only upgrade uploaded %d bytes; want the plan only", n)
	}
	if got := servicePIDs(t, h); !maps.Equal(got, pids) {
		t.Errorf("services restarted by a version-only upgrade: %v -> %v", pids, got)
	}
	checkAgentOnlyUpgrade(t, w, op, h, simpayload.Options{AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, PaddingBytes: pad, PaddingSeed: t.Name()}, newVersion, pids)
	if p, err := w.kube.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod was evicted by upgrades that restarted no service: %v", err)
	}
}

// checkAgentOnlyUpgrade: a payload whose agent alone is new (an agent
// release) replaces winnode-agent.exe on the host and restarts no service:
// the services run winnode-service.exe, whose bytes did not change, not
// the agent.
func checkAgentOnlyUpgrade(t *testing.T, w *world, op *operator, h *winsim.Host, o simpayload.Options, version string, pids map[string]int) {
	t.Helper()
	op.stop()
	o.AgentBuild = t.Name()
	dir := t.TempDir()
	o.Cache = testenv.PayloadCache(t)
	m, err := simpayload.Build(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := m.Lookup("winnode-agent.exe")
	w.startOperator(t, operatorOptions{payloadDir: dir, payload: m, version: version})
	testkit.Eventually(t, 3*time.Minute, "the host to run the new agent", func() (bool, string) {
		inst := w.get(t, "upgraded")
		sum := sha256.Sum256(hostFile(t, h, simpayload.AgentHostPath))
		return inst.Status.Phase == winnodev1.PhaseReady && hex.EncodeToString(sum[:]) == agent.SHA256,
			fmt.Sprintf("phase %s step %s lastError %q", inst.Status.Phase, inst.Status.Step, inst.Status.LastError)
	})
	if got := servicePIDs(t, h); !maps.Equal(got, pids) {
		t.Errorf("services restarted by an agent-only upgrade: %v -> %v", pids, got)
	}
}

// A rotated private key: the hosts (which accept the new key, as the user
// data makes real hosts do) are reconnected with it.
func TestKeyRotation(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "rotated", h)
	before := w.waitReady(t, "rotated", 3*time.Minute)
	if before.Status.KeyFingerprint != ssh.FingerprintSHA256(w.signer.PublicKey()) {
		t.Errorf("status.keyFingerprint %q, want the operator key's %q", before.Status.KeyFingerprint, ssh.FingerprintSHA256(w.signer.PublicKey()))
	}

	key := fixture.NewKey(t)
	newPEM, signer := key.PEM, key.Signer
	if err := h.AuthorizeKey(signer.PublicKey()); err != nil {
		t.Fatal(err)
	}
	w.setKey(t, newPEM)
	t.Cleanup(func() { w.setKey(t, w.keyPEM) })
	want := ssh.FingerprintSHA256(signer.PublicKey())
	testkit.Eventually(t, time.Minute, "the host to be reconnected with the new key", func() (bool, string) {
		inst := w.get(t, "rotated")
		return inst.Status.KeyFingerprint == want && inst.Status.Phase == winnodev1.PhaseReady,
			fmt.Sprintf("keyFingerprint %s phase %s", inst.Status.KeyFingerprint, inst.Status.Phase)
	})
}

func (w *world) setKey(t testing.TB, keyPEM []byte) {
	t.Helper()
	ctx := context.Background()
	s, err := w.kube.CoreV1().Secrets(Namespace).Get(ctx, sshkey.PrivateKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{sshkey.PrivateKeyKey: keyPEM}
	if _, err := w.kube.CoreV1().Secrets(Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A new kubelet and kube-proxy restart services, so the rollout takes one
// node out of service at a time (--max-unavailable's default): each Node is
// cordoned and its pods evicted before its services restart, then it is
// uncordoned once Ready at the new plan, and only then the next one goes.
func TestUpgradeRestartingServicesRollsOutOneNodeAtATime(t *testing.T) {
	w := getWorld(t)
	pr := w.recordPhases(t)
	hosts := []*winsim.Host{w.newHost(t), w.newHost(t), w.newHost(t)}
	op := w.startOperator(t, operatorOptions{})
	var names []string
	for i, h := range hosts {
		names = append(names, fmt.Sprintf("rollout-%d", i))
		w.instanceFor(t, names[i], h)
	}
	kubelets := map[string]int{}
	for i, name := range names {
		inst := w.waitReady(t, name, 3*time.Minute)
		waitStableServices(t, hosts[i])
		kubelets[name] = servicePIDs(t, hosts[i])["kubelet"]
		w.podOn(t, inst.Status.NodeName)
	}
	op.stop()

	// Before each apply: the pod is gone and the Node cordoned.
	var mu sync.Mutex
	var problems []string
	checkDrained := func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if step != configure.StepApply || inst.Status.Phase != winnodev1.PhaseUpgrading {
			return
		}
		ctx := context.Background()
		problem := ""
		if _, err := w.kube.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "iis-"+inst.Status.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			problem = fmt.Sprintf("%s: its pod is still there when the new plan is applied (%v)", inst.Name, err)
		} else if node, err := w.kube.CoreV1().Nodes().Get(ctx, inst.Status.NodeName, metav1.GetOptions{}); err != nil || !node.Spec.Unschedulable {
			problem = fmt.Sprintf("%s: Node not cordoned when the new plan is applied (%v)", inst.Name, err)
		}
		if problem != "" {
			mu.Lock()
			problems = append(problems, problem)
			mu.Unlock()
		}
	}
	dir := t.TempDir()
	m, err := simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t), AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, Build: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	w.startOperator(t, operatorOptions{payloadDir: dir, payload: m, afterStep: checkDrained})
	for i, name := range names {
		testkit.Eventually(t, 5*time.Minute, name+" to run the new kubelet", func() (bool, string) {
			inst := w.get(t, name)
			pid := servicePIDs(t, hosts[i])["kubelet"]
			return inst.Status.Phase == winnodev1.PhaseReady && pid != 0 && pid != kubelets[name],
				fmt.Sprintf("phase %s step %s kubelet pid %d (was %d) lastError %q", inst.Status.Phase, inst.Status.Step, pid, kubelets[name], inst.Status.LastError)
		})
	}

	mu.Lock()
	for _, p := range problems {
		t.Error(p)
	}
	mu.Unlock()
	// The watch trails the reads above: judge its timeline once it has
	// delivered every upgrade back to Ready.
	for _, name := range names {
		pr.waitEndsWith(t, name, winnodev1.PhaseUpgrading, winnodev1.PhaseReady)
	}
	if n := pr.mostAtOnce(names, winnodev1.PhaseUpgrading, winnodev1.PhaseFailed); n != 1 {
		t.Errorf("%d nodes out of service at once during the rollout, want 1 (--max-unavailable 1)", n)
	}
	for i, name := range names {
		inst := w.get(t, name)
		if node := w.checkNode(t, inst, hosts[i]); node.Spec.Unschedulable {
			t.Errorf("Node %s still cordoned after the upgrade", node.Name)
		}
		if c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionConfigured); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s: condition Configured %+v after the upgrade", name, c)
		}
	}
}
