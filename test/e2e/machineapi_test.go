package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/machineapi"
	"github.com/winnode/winnode/internal/machinesource"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// machineSetLabel selects a MachineSet's Machines, as OpenShift's do.
const machineSetLabel = "machine.openshift.io/cluster-api-machineset"

// The main workflow of OpenShift's Windows nodes, with the Machine API's
// real controllers (MachineSet, Machine with the simulated cloud's
// actuator, node link):
//   - the operator keeps windows-user-data in openshift-machine-api;
//   - a Windows MachineSet scaled 0 → 2 → 3 → 1: every Machine becomes a
//     Ready node, linked to its Machine by the node link controller
//     (status.nodeRef) through the provider ID winnode gave the kubelet;
//   - a Machine deleted while its host is being configured is replaced by
//     its MachineSet, and its instance goes;
//   - a scaled-down Machine's host is deconfigured before the Machine API
//     powers it off (winnode's pre-terminate hook), its Node deleted;
//   - a Machine without the Windows label, and one labelled
//     winnode.io/ignore, are left alone;
//   - Windows Machines whose infrastructure reports 0.0.0.0 or :: (the
//     unspecified addresses) as their address are refused by the address
//     policy, by name, as a windows-instances entry would be: their hosts
//     see no SSH connection;
//   - no bootstrap-token Secret is created anywhere.
func TestOpenShiftMachineSet(t *testing.T) {
	w := getWorldOf(t, kindOpenShift)
	tokens := w.watchBootstrapTokenSecrets(t)
	pr := w.recordPhases(t)
	// A slow host: removing winnode from a Machine's host takes seconds,
	// while the Machine API drains a Node without pods at once. Without
	// winnode's pre-terminate hook, the VM would be powered off meanwhile.
	w.startOperator(t, operatorOptions{afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if step == configure.StepRemove && inst.Spec.Source.Kind == winnodev1.SourceMachine {
			time.Sleep(3 * time.Second)
		}
	}})
	w.waitUserDataCopy(t)
	// A Machine whose name an administrator's instance already has.
	manual := builder.Instance("e2e-taken").Host("127.0.0.250", "Administrator").Manual().Build()
	if err := w.client.Create(context.Background(), manual); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.forget(manual.Name) })
	w.createMachine(t, "e2e-taken", map[string]string{machineapi.LabelOSID: "Windows"})
	linux := w.createMachine(t, "e2e-linux", map[string]string{})
	ignored := w.createMachine(t, "e2e-ignored", map[string]string{machineapi.LabelOSID: "Windows", machineapi.LabelIgnore: "true"})
	misreported := w.createMisreportedMachine(t, "e2e-misreported", "0.0.0.0")
	misreportedV6 := w.createMisreportedMachine(t, "e2e-unspecified-v6", "::")

	ms := w.createMachineSet(t, "e2e-windows")
	w.scaleMachineSet(t, ms, 2)
	w.waitMachineNodes(t, ms, 2)

	w.checkMisreportedMachine(t, misreported, "0.0.0.0")
	w.checkMisreportedMachine(t, misreportedV6, "::")

	w.scaleMachineSet(t, ms, 3)
	doomed := w.deleteMachineWhileConfiguring(t, ms)
	w.waitMachineNodes(t, ms, 3)
	w.checkMachineGone(t, doomed, true)

	before := w.machinesOf(t, ms)
	w.scaleMachineSet(t, ms, 1)
	w.waitMachineNodes(t, ms, 1)
	after := w.machinesOf(t, ms)
	for _, m := range before {
		if !containsMachine(after, m.Name) {
			w.checkMachineGone(t, m.Name, true)
		}
	}

	// A newer rendered worker config reaches the Machine's host through the
	// ordinary upgrade.
	last := after[0].Name
	plan0 := planVersion(w.get(t, last))
	mc, err := w.env.OpenShift.RenderWorker(context.Background(), testenv.RenderedWorkerOptions{ClusterDNS: "10.96.0.12"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.env.OpenShift.DeleteRenderedWorker(context.Background(), mc) })
	w.waitPlanChanged(t, pr, last, plan0)
	checkKubeletDNS(t, mapiCloud.c.Host(last), "10.96.0.12")

	// A key rotation: the last Machine's host only knows the old key; it is
	// replaced by one booted from the new user data.
	w.rotateKey(t)
	w.waitUserDataCopy(t)
	old := after[0].Name
	testkit.Eventually(t, 5*time.Minute, "Machine "+old+" replaced after the key rotation", func() (bool, string) {
		ms := w.machinesOf(t, ms)
		if len(ms) != 1 || ms[0].Name == old {
			return false, fmt.Sprintf("%d Machines", len(ms))
		}
		return w.machineIsNode(t, &ms[0])
	})
	// Its host refuses the new key: nothing could clean it, and nothing
	// needs to, since the VM is terminated.
	w.checkMachineGone(t, old, false)

	w.checkMachineLeftAlone(t, linux.Name, machinesource.NotWindows)
	w.checkMachineLeftAlone(t, ignored.Name, machinesource.Ignored)
	w.checkNameConflict(t, manual.Name)
	if got := tokens.added(); len(got) > 0 {
		t.Errorf("bootstrap-token Secrets were created (%v); OpenShift's API server does not accept them", got)
	}
	for _, e := range mapiCloud.unsafeExecs() {
		t.Error(e)
	}
}

// waitUserDataCopy waits for the operator's copy of windows-user-data in
// openshift-machine-api, equal to the original.
func (w *world) waitUserDataCopy(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, time.Minute, "windows-user-data copied to openshift-machine-api", func() (bool, string) {
		ctx := context.Background()
		orig, err := w.kube.CoreV1().Secrets(Namespace).Get(ctx, "windows-user-data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		dup, err := w.kube.CoreV1().Secrets(machineapi.Namespace).Get(ctx, "windows-user-data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return bytes.Equal(orig.Data["userData"], dup.Data["userData"]), "different user data"
	})
}

// createMachine creates a lone Machine (no MachineSet) with labels, deleted
// when the test ends. Its spec is that of every Machine of these tests: the
// test world's winsim provider, user data from Secret windows-user-data, as
// a Windows MachineSet on AWS, Azure or vSphere names it.
func (w *world) createMachine(t *testing.T, name string, labels map[string]string) *machinev1.Machine {
	t.Helper()
	m := builder.OpenShiftMachine(machineapi.Namespace, name).Labels(labels).
		Labels(map[string]string{machinev1.MachineClusterIDLabel: testenv.InfrastructureName}).
		ProviderSpec(testenv.WinsimProviderSpec("windows-user-data")).Build()
	if err := w.client.Create(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.deleteMachineAndWait(t, name) })
	return m
}

// createMisreportedMachine creates a lone Windows Machine (createMachine)
// whose simulated infrastructure reports address as its InternalIP, while
// its host runs at its own address.
func (w *world) createMisreportedMachine(t *testing.T, name, address string) string {
	t.Helper()
	mapiCloud.c.MisreportAddresses(name, address)
	return w.createMachine(t, name, map[string]string{machineapi.LabelOSID: "Windows"}).Name
}

// checkMisreportedMachine waits until the address policy refuses the
// instance of Machine name (createMisreportedMachine) at address, then
// checks that its host saw no SSH connection and it has no nodeRef.
func (w *world) checkMisreportedMachine(t *testing.T, name, address string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Minute, "Machine "+name+"'s instance refused by the address policy", func() (bool, string) {
		got, why := w.addressRefused(t, name)
		if got != "" && got != address {
			t.Fatalf("Machine %s's instance has address %s, want %s", name, got, address)
		}
		return got != "", why
	})
	checkHostUntouched(t, mapiCloud, name)
	m := &machinev1.Machine{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Namespace: machineapi.Namespace, Name: name}, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.NodeRef != nil {
		t.Errorf("Machine %s has nodeRef %s", name, m.Status.NodeRef.Name)
	}
}

// createMachineSet creates a Windows MachineSet of no replicas, scaled to
// 0 and deleted when the test ends.
func (w *world) createMachineSet(t *testing.T, name string) *machinev1.MachineSet {
	t.Helper()
	ms := testenv.WinsimMachineSet(name, "windows-user-data", 0, map[string]string{machineapi.LabelOSID: "Windows"})
	if err := w.client.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.scaleMachineSet(t, ms, 0)
		testkit.Eventually(t, 3*time.Minute, "the MachineSet's Machines gone", func() (bool, string) {
			n := len(w.machinesOf(t, ms))
			return n == 0, fmt.Sprintf("%d left", n)
		})
		_ = w.client.Delete(context.Background(), ms)
	})
	return ms
}

// scaleMachineSet sets the MachineSet's replicas, as `oc scale` does.
func (w *world) scaleMachineSet(t *testing.T, ms *machinev1.MachineSet, n int32) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	if err := w.client.Patch(context.Background(), ms, patch); err != nil {
		t.Fatalf("scaling MachineSet %s to %d: %v", ms.Name, n, err)
	}
}

// machinesOf lists the MachineSet's Machines.
func (w *world) machinesOf(t *testing.T, ms *machinev1.MachineSet) []machinev1.Machine {
	t.Helper()
	var list machinev1.MachineList
	if err := w.client.List(context.Background(), &list, client.InNamespace(machineapi.Namespace), client.MatchingLabels{machineSetLabel: ms.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func containsMachine(ms []machinev1.Machine, name string) bool {
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

// waitMachineNodes waits until the MachineSet has exactly n Machines, none
// being deleted, each Running with the node link controller's nodeRef to
// the Node of its Ready WindowsInstance, whose providerID is the Machine's.
func (w *world) waitMachineNodes(t *testing.T, ms *machinev1.MachineSet, n int) {
	t.Helper()
	testkit.Eventually(t, 5*time.Minute, fmt.Sprintf("MachineSet %s: %d Machines, each a Ready node", ms.Name, n), func() (bool, string) {
		machines := w.machinesOf(t, ms)
		if len(machines) != n {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		for i := range machines {
			if ok, why := w.machineIsNode(t, &machines[i]); !ok {
				return false, machines[i].Name + ": " + why
			}
		}
		return true, ""
	})
}

// machineIsNode reports whether Machine m is a Running Machine whose
// instance is Ready and whose Node the node link controller linked.
func (w *world) machineIsNode(t *testing.T, m *machinev1.Machine) (bool, string) {
	t.Helper()
	if !m.DeletionTimestamp.IsZero() {
		return false, "being deleted"
	}
	if ptr.Deref(m.Status.Phase, "") != machinev1.PhaseRunning || m.Status.NodeRef == nil {
		return false, fmt.Sprintf("phase %q, nodeRef %v", ptr.Deref(m.Status.Phase, ""), m.Status.NodeRef)
	}
	inst := &winnodev1.WindowsInstance{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Name: m.Name}, inst); err != nil {
		return false, err.Error()
	}
	if inst.Status.Phase != winnodev1.PhaseReady || inst.Status.NodeName != m.Status.NodeRef.Name {
		return false, fmt.Sprintf("instance %s, Node %q (nodeRef %s)", inst.Status.Phase, inst.Status.NodeName, m.Status.NodeRef.Name)
	}
	node, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	if node.Spec.ProviderID == "" || node.Spec.ProviderID != ptr.Deref(m.Spec.ProviderID, "") {
		t.Errorf("Node %s has providerID %q, Machine %s %q", node.Name, node.Spec.ProviderID, m.Name, ptr.Deref(m.Spec.ProviderID, ""))
	}
	return true, ""
}

// deleteMachineWhileConfiguring deletes a Machine of the MachineSet as
// soon as its instance is being configured, and returns its name.
func (w *world) deleteMachineWhileConfiguring(t *testing.T, ms *machinev1.MachineSet) string {
	t.Helper()
	var name string
	testkit.Eventually(t, 3*time.Minute, "an instance of a new Machine being configured", func() (bool, string) {
		for _, m := range w.machinesOf(t, ms) {
			inst := &winnodev1.WindowsInstance{}
			if err := w.client.Get(context.Background(), client.ObjectKey{Name: m.Name}, inst); err == nil && inst.Status.Phase == winnodev1.PhaseConfiguring {
				name = m.Name
				return true, ""
			}
		}
		return false, "none yet"
	})
	if err := w.client.Delete(context.Background(), builder.OpenShiftMachine(machineapi.Namespace, name).Build()); err != nil {
		t.Fatalf("deleting Machine %s: %v", name, err)
	}
	return name
}

// checkMachineGone checks that a deleted Machine is gone with its
// instance, and that its host was powered off — deconfigured first when
// deconfigured is set.
func (w *world) checkMachineGone(t *testing.T, name string, deconfigured bool) {
	t.Helper()
	testkit.Eventually(t, 3*time.Minute, "Machine "+name+" and its instance gone", func() (bool, string) {
		err := w.client.Get(context.Background(), client.ObjectKey{Namespace: machineapi.Namespace, Name: name}, &machinev1.Machine{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Machine: %v", err)
		}
		err = w.client.Get(context.Background(), client.ObjectKey{Name: name}, &winnodev1.WindowsInstance{})
		return apierrors.IsNotFound(err), fmt.Sprintf("instance: %v", err)
	})
	off, kubelet := mapiCloud.kubeletAtPowerOff(name)
	if !off {
		t.Errorf("Machine %s is gone and the cloud never powered its host off", name)
	}
	if deconfigured && kubelet {
		t.Errorf("Machine %s's host was powered off with the kubelet still installed: the termination did not wait for deconfiguration", name)
	}
}

// checkMachineLeftAlone checks that the operator made no instance for a
// Machine and put no hook on it, although the Machine API provisioned it,
// once the Machine API source has looked at the Machine as it is: a change
// of the Machine (an annotation) makes the source look again, and its
// count of Machines left alone for reason (winnode_machines_left_alone_total)
// growing says that it looked and made nothing of it. The Machine is the
// only one of the test left alone for that reason.
func (w *world) checkMachineLeftAlone(t *testing.T, name, reason string) {
	t.Helper()
	ctx := context.Background()
	m := &machinev1.Machine{}
	if err := w.client.Get(ctx, client.ObjectKey{Namespace: machineapi.Namespace, Name: name}, m); err != nil {
		t.Fatal(err)
	}
	if p := ptr.Deref(m.Status.Phase, ""); p != machinev1.PhaseProvisioned && p != machinev1.PhaseRunning {
		t.Errorf("Machine %s is %q: the check needs it provisioned", name, p)
	}
	looks := func() float64 {
		return metricValue(t, "winnode_machines_left_alone_total", map[string]string{"source": machinesource.SourceMachineAPI, "reason": reason})
	}
	before := looks()
	poke := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.winnode.io/look-again":"%d"}}}`, time.Now().UnixNano())
	if err := w.client.Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(poke))); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the Machine API source to look at Machine "+name+" again", func() (bool, string) {
		n := looks()
		return n > before, fmt.Sprintf("%v looks at Machines left alone for %s, %v before", n, reason, before)
	})
	if err := w.client.Get(ctx, client.ObjectKey{Namespace: machineapi.Namespace, Name: name}, m); err != nil {
		t.Fatal(err)
	}
	err := w.client.Get(ctx, client.ObjectKey{Name: name}, &winnodev1.WindowsInstance{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Machine %s: a WindowsInstance exists (%v); the Machine is not one winnode configures", name, err)
	}
	for _, h := range m.Spec.LifecycleHooks.PreTerminate {
		if strings.Contains(h.Owner, "winnode") {
			t.Errorf("Machine %s carries winnode's hook %s", name, h.Name)
		}
	}
}

// deleteMachineAndWait deletes a Machine and waits until it is gone.
func (w *world) deleteMachineAndWait(t *testing.T, name string) {
	if err := w.client.Delete(context.Background(), builder.OpenShiftMachine(machineapi.Namespace, name).Build()); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting Machine %s: %v", name, err)
		return
	}
	testkit.Eventually(t, 2*time.Minute, "Machine "+name+" gone", func() (bool, string) {
		err := w.client.Get(context.Background(), client.ObjectKey{Namespace: machineapi.Namespace, Name: name}, &machinev1.Machine{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// rotateKey replaces the operator's key with a new one, and puts the
// world's key back when the test ends (after the test's Machines are gone).
func (w *world) rotateKey(t *testing.T) {
	t.Helper()
	key, err := fixture.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	set := func(pem []byte) error {
		patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"data":{"private-key.pem":%q}}`, base64.StdEncoding.EncodeToString(pem)))
		return w.client.Patch(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "cloud-private-key"}}, patch)
	}
	if err := set(key.PEM); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(w.keyPEM); err != nil {
			t.Errorf("putting the world's key back: %v", err)
		}
	})
}

// checkNameConflict checks that a Windows Machine whose name an
// administrator's WindowsInstance has got a Warning event saying so, and
// that the instance was left as it was.
func (w *world) checkNameConflict(t *testing.T, name string) {
	t.Helper()
	testkit.Eventually(t, time.Minute, "event InstanceConflict on Machine "+name, func() (bool, string) {
		for _, msg := range w.eventMessages(t, machineapi.Namespace, name, "InstanceConflict") {
			if strings.Contains(msg, "WindowsInstance "+name+" exists and belongs to another source (Manual)") {
				return true, ""
			}
		}
		return false, fmt.Sprint(w.eventReasons(t, machineapi.Namespace, name))
	})
	inst := w.get(t, name)
	if inst.Spec.Source.Kind != winnodev1.SourceManual || inst.Spec.Address != "127.0.0.250" || inst.Labels[winnodev1.LabelSourceKind] != "" {
		t.Errorf("the administrator's instance %s was changed: %+v, labels %v", name, inst.Spec, inst.Labels)
	}
}
