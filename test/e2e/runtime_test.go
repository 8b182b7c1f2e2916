package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// The container runtime (docs/containers.md): winnode installs containerd
// on a stock host, enables the Containers feature through a restart, and
// leaves a containerd it did not install alone unless told to rely on it.

// instanceWith creates a WindowsInstance for a simulated host with the
// given spec.containerRuntime ("": the operator's default).
func (w *world) instanceWith(t testing.TB, name string, h *winsim.Host, mode winnodev1.ContainerRuntime) *winnodev1.WindowsInstance {
	t.Helper()
	inst := builder.Instance(name).Host(h.IP(), h.User()).Port(int32(h.Port())).Manual().Build()
	inst.Spec.ContainerRuntime = mode
	if err := w.client.Create(context.Background(), inst); err != nil {
		t.Fatalf("creating WindowsInstance %s: %v", name, err)
	}
	t.Cleanup(func() { w.forget(name) })
	return inst
}

// A stock simulated Windows Server, with no containerd, becomes a Ready
// node that runs a pod: the operator gives the new instance its default
// mode, Managed, and the plan installs containerd (its service restarts on
// failure, the kubelet depends on it, its configuration is the one
// winnode writes).
func TestBareHostBecomesANodeWithManagedContainerd(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	if _, err := h.Services().Get("containerd"); !errors.Is(err, simscm.ErrNotFound) {
		t.Fatalf("a stock simulated host has a containerd service (%v)", err)
	}
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "bare", h)
	inst := w.waitReady(t, "bare", 3*time.Minute)
	w.checkNode(t, inst, h)
	if inst.Spec.ContainerRuntime != winnodev1.ContainerRuntimeManaged {
		t.Errorf("spec.containerRuntime %q, want the operator's default Managed", inst.Spec.ContainerRuntime)
	}
	w.waitEvents(t, "default", "bare", "ContainerRuntime")

	ctd, err := h.Services().Get("containerd")
	if err != nil {
		t.Fatalf("no containerd service after configuration: %v", err)
	}
	if !strings.Contains(ctd.Config.BinaryPathName, plan.ContainerdDir+`\containerd.exe`) || !strings.Contains(ctd.Config.BinaryPathName, plan.ContainerdConfigPath) {
		t.Errorf("containerd's command line %q: want winnode's containerd.exe with --config %s", ctd.Config.BinaryPathName, plan.ContainerdConfigPath)
	}
	if len(ctd.Config.RecoveryActions) == 0 || ctd.Config.RecoveryActions[0].Type != plan.RecoveryRestart {
		t.Errorf("containerd's recovery actions %v: want restart on failure", ctd.Config.RecoveryActions)
	}
	if ctd.Status.State != simscm.Running {
		t.Errorf("containerd is %s", ctd.Status.State)
	}
	kubelet, err := h.Services().Get("kubelet")
	if err != nil || !slices.ContainsFunc(kubelet.Config.Dependencies, func(d string) bool { return strings.EqualFold(d, "containerd") }) {
		t.Errorf("the kubelet service does not depend on containerd: %v %v", kubelet.Config.Dependencies, err)
	}
	path, _ := h.Path(plan.ContainerdConfigPath)
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "version = 4") {
		t.Errorf("containerd's configuration %s: %v\n%s", plan.ContainerdConfigPath, err, data)
	}
	// The stand-in kubelet asks containerd, at its pipe, to pull the
	// pod's image before it reports the pod Running.
	w.podOn(t, inst.Status.NodeName)
}

// A host without the Windows Containers feature: the agent enables it,
// the operator restarts the host and says so (RebootRequired), and the
// configuration goes on once the host is back.
func TestContainersFeatureEnabledThroughARestart(t *testing.T) {
	w := getWorld(t)
	h := w.newHostTuned(t, true, func(o *winsim.Options) { o.WithoutContainersFeature = true })
	before, err := h.SCM().Host(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "no-feature", h)
	w.waitCondition(t, "no-feature", winnodev1.ConditionRebootRequired, "True", winnodev1.ReasonRebooting, 2*time.Minute)
	inst := w.waitReady(t, "no-feature", 3*time.Minute)
	w.checkNode(t, inst, h)
	if c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionRebootRequired); c != nil {
		t.Errorf("condition RebootRequired remains on a Ready instance: %s", conditionSummary(inst.Status.Conditions))
	}
	w.waitEvents(t, "default", "no-feature", string(plan.ErrRebootRequired), "Rebooted")
	if st := h.Feature(plan.ContainersFeature); st != simscm.FeatureEnabled {
		t.Errorf("feature Containers is %s after the restart", st)
	}
	after, err := h.SCM().Host(context.Background())
	if err != nil || !after.BootTime.After(before.BootTime) {
		t.Errorf("boot time %v then %v (%v): the host was not restarted", before.BootTime, after.BootTime, err)
	}
}

// A host that already runs a containerd winnode did not install: under
// Managed it is refused (ContainerRuntimeConflict) and nothing is
// installed; once the instance says Existing, winnode relies on that
// containerd and leaves it as it is.
func TestForeignContainerdRefusedUnderManaged(t *testing.T) {
	w := getWorld(t)
	h := w.newHostTuned(t, true, func(o *winsim.Options) { o.ForeignContainerd = true })
	w.startOperator(t, operatorOptions{})
	w.instanceWith(t, "foreign", h, winnodev1.ContainerRuntimeManaged)
	inst := w.waitCondition(t, "foreign", winnodev1.ConditionContainerRuntimeConflict, "True", winnodev1.ReasonContainerRuntimeConflict, 2*time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed || !strings.Contains(inst.Status.LastError, "Existing") {
		t.Errorf("phase %s, lastError %q: want Failed, naming containerRuntime Existing as a way out", inst.Status.Phase, inst.Status.LastError)
	}
	if _, err := h.Services().Get("kubelet"); err == nil {
		t.Error("a kubelet service was installed beside a foreign containerd under Managed")
	}
	patch := client.MergeFrom(inst.DeepCopy())
	inst.Spec.ContainerRuntime = winnodev1.ContainerRuntimeExisting
	if err := w.client.Patch(context.Background(), inst, patch); err != nil {
		t.Fatal(err)
	}
	inst = w.waitReady(t, "foreign", 3*time.Minute)
	w.checkNode(t, inst, h)
	if c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionContainerRuntimeConflict); c != nil {
		t.Errorf("condition ContainerRuntimeConflict remains: %s", conditionSummary(inst.Status.Conditions))
	}
	ctd, err := h.Services().Get("containerd")
	if err != nil || !strings.Contains(ctd.Config.BinaryPathName, winsim.ContainerdPath) {
		t.Errorf("the foreign containerd service changed: %q (%v)", ctd.Config.BinaryPathName, err)
	}
	if p, _ := h.Path(plan.ContainerdConfigPath); fileExists(p) {
		t.Errorf("winnode wrote %s on a host whose containerd it does not manage", plan.ContainerdConfigPath)
	}
}

// An instance the operator configured before it managed containerd (its
// status has a phase, its spec no containerRuntime) is set to Existing on
// the operator's first start, and its host's own containerd is kept.
func TestInstanceConfiguredBeforeIsSetToExisting(t *testing.T) {
	w := getWorld(t)
	h := w.newHostTuned(t, true, func(o *winsim.Options) { o.ForeignContainerd = true })
	inst := w.instanceWith(t, "before", h, "")
	inst.Status.Phase = winnodev1.PhaseConfiguring
	if err := w.client.Status().Update(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	w.startOperator(t, operatorOptions{})
	inst = w.waitReady(t, "before", 3*time.Minute)
	if inst.Spec.ContainerRuntime != winnodev1.ContainerRuntimeExisting {
		t.Errorf("spec.containerRuntime %q, want Existing for an instance configured before", inst.Spec.ContainerRuntime)
	}
	ctd, err := h.Services().Get("containerd")
	if err != nil || !strings.Contains(ctd.Config.BinaryPathName, winsim.ContainerdPath) {
		t.Errorf("the host's own containerd service changed: %q (%v)", ctd.Config.BinaryPathName, err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// hostFileHas says whether the host's file ends with the simulated build
// marker of build (simpayload.Options.ContainerdBuild).
func hostFileHas(t testing.TB, h *winsim.Host, path, build string) bool {
	t.Helper()
	p, err := h.Path(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	return err == nil && strings.Contains(string(data), "winnode simulated build "+build+"\n")
}

// containerd upgrades with the payload: a new containerd.exe moves the
// node through Upgrading and replaces the running one; a new one that
// fails to start is rolled back to the previous binaries, which run again,
// and the instance says RolledBack.
func TestContainerdUpgradeAndRollback(t *testing.T) {
	w := getWorld(t)
	pr := w.recordPhases(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "ctd-upgrade", h)
	w.waitReady(t, "ctd-upgrade", 3*time.Minute)
	before, err := h.Services().Get("containerd")
	if err != nil {
		t.Fatal(err)
	}
	op.stop()

	payloadWith := func(o simpayload.Options) (string, *payload.Manifest) {
		hostLocal, err := testenv.HostLocal()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		o.AgentBinary, o.ServiceBinary, o.StandinBinary, o.HostLocalBinary = w.agent, w.service, w.standin, hostLocal
		o.Cache = testenv.PayloadCache(t)
		m, err := simpayload.Build(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		return dir, m
	}
	dir, m := payloadWith(simpayload.Options{ContainerdBuild: "2"})
	op = w.startOperator(t, operatorOptions{payloadDir: dir, payload: m})
	testkit.Eventually(t, 3*time.Minute, "the host to run containerd build 2", func() (bool, string) {
		inst := w.get(t, "ctd-upgrade")
		return inst.Status.Phase == winnodev1.PhaseReady && hostFileHas(t, h, simpayload.ContainerdHostPath, "2"),
			fmt.Sprintf("phase %s step %s lastError %q", inst.Status.Phase, inst.Status.Step, inst.Status.LastError)
	})
	pr.waitEndsWith(t, "ctd-upgrade", winnodev1.PhaseReady, winnodev1.PhaseUpgrading, winnodev1.PhaseReady)
	after, err := h.Services().Get("containerd")
	if err != nil || after.Status.State != simscm.Running || after.Status.PID == before.Status.PID {
		t.Errorf("containerd after the upgrade: %v pid %d (was %d), %v: want a new process running", after.Status.State, after.Status.PID, before.Status.PID, err)
	}
	op.stop()

	dir, m = payloadWith(simpayload.Options{ContainerdBuild: "3", ContainerdFails: true})
	w.startOperator(t, operatorOptions{payloadDir: dir, payload: m})
	inst := w.waitCondition(t, "ctd-upgrade", winnodev1.ConditionConfigured, "False", winnodev1.ReasonRolledBack, 3*time.Minute)
	if !strings.Contains(inst.Status.LastError, "containerd") {
		t.Errorf("lastError %q does not name containerd", inst.Status.LastError)
	}
	if !hostFileHas(t, h, simpayload.ContainerdHostPath, "2") {
		t.Error("containerd.exe is not the previous build (2) after the rollback")
	}
	ctd, err := h.Services().Get("containerd")
	if err != nil || ctd.Status.State != simscm.Running {
		t.Errorf("containerd after the rollback: %v, %v: want the previous one running", ctd.Status.State, err)
	}
}
