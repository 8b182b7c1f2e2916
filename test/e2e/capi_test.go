package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/capisource"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

// Windows nodes from a Cluster API MachineDeployment, with Cluster API's
// real core controllers (Cluster, MachineDeployment, MachineSet, Machine)
// and the test world's simulated infrastructure provider, whose hosts run
// their bootstrap data as cloudbase-init would:
//   - winnode's bootstrap provider writes each Machine's data (a
//     WinnodeConfig cloned from the WinnodeConfigTemplate), and its Machine
//     source turns each provisioned Machine into a WindowsInstance;
//   - 0 → 2 → 3 → 1 Machines: each a Ready node whose providerID is the
//     Machine's, linked by Cluster API's Machine controller (nodeRef), its
//     computer name the NetBIOS-safe one its WinnodeConfig names (at most
//     15 characters, distinct although the Machines' names share their
//     first 15);
//   - a Machine deleted while its host is being configured is replaced,
//     its instance gone;
//   - a scaled-down Machine's host is deconfigured before its
//     infrastructure is deleted (winnode's pre-terminate hook);
//   - a new bootstrap template rolls the Machines: the new one's computer
//     name has the new prefix, the old one is deconfigured and gone.
func TestClusterAPIMachineDeployment(t *testing.T) {
	w := getWorldOf(t, kindCAPI)
	ctx := context.Background()
	// A slow host, as in TestOpenShiftMachineSet: removing winnode takes
	// seconds, which the pre-terminate hook must wait for.
	w.startOperator(t, operatorOptions{afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if step == configure.StepRemove && inst.Spec.Source.Kind == winnodev1.SourceMachine {
			time.Sleep(3 * time.Second)
		}
	}})
	cluster, err := w.env.CreateCAPICluster(ctx, "windows-cluster")
	if err != nil {
		t.Fatal(err)
	}
	w.createWinnodeConfigTemplate(t, "windows-workers", "")
	md := w.createMachineDeployment(t, cluster.Name, "windows-workers-md-0", "windows-workers")

	w.scaleMachineDeployment(t, md, 2)
	w.waitCAPINodes(t, md, 2, "")
	w.scaleMachineDeployment(t, md, 3)
	doomed := w.deleteCAPIMachineWhileConfiguring(t, md)
	w.waitCAPINodes(t, md, 3, "")
	w.checkCAPIMachineGone(t, doomed)

	before := w.capiMachinesOf(t, md)
	w.scaleMachineDeployment(t, md, 1)
	w.waitCAPINodes(t, md, 1, "")
	w.checkGoneSince(t, before, w.capiMachinesOf(t, md))

	// A template change rolls the Machines (one more, none unavailable).
	w.createWinnodeConfigTemplate(t, "windows-workers-v2", "wv2")
	before = w.capiMachinesOf(t, md)
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"template":{"spec":{"bootstrap":{"configRef":{"name":"windows-workers-v2"}}}}}}`))
	if err := w.client.Patch(ctx, md, patch); err != nil {
		t.Fatal(err)
	}
	w.waitCAPINodes(t, md, 1, "wv2-")
	w.checkGoneSince(t, before, w.capiMachinesOf(t, md))

	for _, e := range capiCloud.unsafeExecs() {
		t.Error(e)
	}
}

// createWinnodeConfigTemplate creates a WinnodeConfigTemplate with a
// computer name prefix ("": the Machine's name).
func (w *world) createWinnodeConfigTemplate(t *testing.T, name, prefix string) {
	t.Helper()
	w.createWinnodeConfigTemplateIn(t, testenv.CAPINamespace, name, prefix)
}

// createWinnodeConfigTemplateIn is createWinnodeConfigTemplate in
// namespace ns.
func (w *world) createWinnodeConfigTemplateIn(t *testing.T, ns, name, prefix string) {
	t.Helper()
	w.createWinnodeConfigTemplateOf(t, ns, name, prefix, bootstrapv1.ModePush)
}

// createWinnodeConfigTemplateOf is createWinnodeConfigTemplateIn of mode.
func (w *world) createWinnodeConfigTemplateOf(t testing.TB, ns, name, prefix string, mode bootstrapv1.Mode) {
	t.Helper()
	tmpl := &bootstrapv1.WinnodeConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	tmpl.Spec.Template.Spec.ComputerNamePrefix = prefix
	tmpl.Spec.Template.Spec.Mode = mode
	if err := w.client.Create(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
}

// createMachineDeployment creates a MachineDeployment of no Machines whose
// bootstrap is the WinnodeConfigTemplate bootstrap; it is scaled to 0 and
// deleted when the test ends.
func (w *world) createMachineDeployment(t *testing.T, cluster, name, bootstrap string) *clusterv1.MachineDeployment {
	t.Helper()
	return w.createMachineDeploymentIn(t, testenv.CAPINamespace, cluster, name, bootstrap)
}

// createMachineDeploymentIn is createMachineDeployment in namespace ns.
func (w *world) createMachineDeploymentIn(t *testing.T, ns, cluster, name, bootstrap string) *clusterv1.MachineDeployment {
	t.Helper()
	return w.createMachineDeploymentFrom(t, ns, cluster, name, bootstrap, "")
}

// createMachineDeploymentFrom is createMachineDeploymentIn whose Machines
// boot from the simulated cloud's image ("": the stock Windows Server
// image, which carries no winnode).
func (w *world) createMachineDeploymentFrom(t testing.TB, ns, cluster, name, bootstrap, image string) *clusterv1.MachineDeployment {
	t.Helper()
	md, infra := testenv.WinsimMachineDeployment(cluster, name, 0, testenv.WinnodeConfigTemplateBootstrap(bootstrap))
	if image != "" {
		if err := unstructured.SetNestedField(infra.Object, image, "spec", "template", "spec", "image"); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range testenv.InNamespace(ns, infra, md) {
		if err := w.client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		w.scaleMachineDeployment(t, md, 0)
		testkit.Eventually(t, 3*time.Minute, "the MachineDeployment's Machines gone", func() (bool, string) {
			n := len(w.capiMachinesOf(t, md))
			return n == 0, fmt.Sprintf("%d left", n)
		})
		_ = w.client.Delete(context.Background(), md)
	})
	return md
}

// scaleMachineDeployment sets the MachineDeployment's replicas, as
// `kubectl scale` does.
func (w *world) scaleMachineDeployment(t testing.TB, md *clusterv1.MachineDeployment, n int32) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	if err := w.client.Patch(context.Background(), md, patch); err != nil {
		t.Fatalf("scaling MachineDeployment %s to %d: %v", md.Name, n, err)
	}
}

// capiMachinesOf lists the MachineDeployment's Machines.
func (w *world) capiMachinesOf(t testing.TB, md *clusterv1.MachineDeployment) []clusterv1.Machine {
	t.Helper()
	var list clusterv1.MachineList
	if err := w.client.List(context.Background(), &list, client.InNamespace(md.Namespace), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitCAPINodes waits until the MachineDeployment has exactly n Machines,
// none being deleted, each a Running Machine with Cluster API's nodeRef to
// the Node of its Ready instance, named after its WinnodeConfig's
// computer name (which starts with prefix), distinct from the others'.
func (w *world) waitCAPINodes(t *testing.T, md *clusterv1.MachineDeployment, n int, prefix string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Minute, fmt.Sprintf("MachineDeployment %s: %d Machines, each a Ready node", md.Name, n), func() (bool, string) {
		machines := w.capiMachinesOf(t, md)
		if len(machines) != n {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		names := map[string]bool{}
		for i := range machines {
			name, why := w.capiMachineNode(t, &machines[i], prefix)
			if name == "" {
				return false, machines[i].Name + ": " + why
			}
			names[name] = true
		}
		return len(names) == n, fmt.Sprintf("computer names %v, not distinct", names)
	})
}

// capiMachineNode is the Node name of Machine m when it is a Running
// Machine linked to the Node of its Ready instance ("" and why not).
func (w *world) capiMachineNode(t *testing.T, m *clusterv1.Machine, prefix string) (string, string) {
	t.Helper()
	if !m.DeletionTimestamp.IsZero() || m.Status.Phase != string(clusterv1.MachinePhaseRunning) || !m.Status.NodeRef.IsDefined() {
		return "", fmt.Sprintf("phase %q, nodeRef %q", m.Status.Phase, m.Status.NodeRef.Name)
	}
	inst := &winnodev1.WindowsInstance{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Name: capisource.InstanceName(m.Namespace, m.Name)}, inst); err != nil {
		return "", err.Error()
	}
	if inst.Status.Phase != winnodev1.PhaseReady || inst.Status.NodeName != m.Status.NodeRef.Name {
		return "", fmt.Sprintf("instance %s, Node %q", inst.Status.Phase, inst.Status.NodeName)
	}
	cfg := &bootstrapv1.WinnodeConfig{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err != nil {
		return "", err.Error()
	}
	node, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", err.Error()
	}
	name := cfg.Status.ComputerName
	if inst.Spec.NodeName != plan.NodeName(name) {
		t.Errorf("instance %s: spec.nodeName %q; want the computer name winnode assigned, %q", inst.Name, inst.Spec.NodeName, plan.NodeName(name))
	}
	if node.Name != plan.NodeName(name) || len(name) > 15 {
		t.Errorf("Machine %s: Node %s, computer name %q (want at most 15 characters, and the Node named after it)", m.Name, node.Name, name)
	}
	if !strings.HasPrefix(name, prefix) {
		return "", fmt.Sprintf("computer name %q: not of the template with prefix %q (yet)", name, prefix)
	}
	if node.Spec.ProviderID == "" || node.Spec.ProviderID != m.Spec.ProviderID {
		t.Errorf("Node %s has providerID %q, Machine %s %q", node.Name, node.Spec.ProviderID, m.Name, m.Spec.ProviderID)
	}
	return node.Name, ""
}

// deleteCAPIMachineWhileConfiguring deletes a Machine of the
// MachineDeployment as soon as its instance is being configured.
func (w *world) deleteCAPIMachineWhileConfiguring(t *testing.T, md *clusterv1.MachineDeployment) string {
	t.Helper()
	var doomed *clusterv1.Machine
	testkit.Eventually(t, 3*time.Minute, "an instance of a new Machine being configured", func() (bool, string) {
		for _, m := range w.capiMachinesOf(t, md) {
			inst := &winnodev1.WindowsInstance{}
			if err := w.client.Get(context.Background(), client.ObjectKey{Name: capisource.InstanceName(m.Namespace, m.Name)}, inst); err == nil && inst.Status.Phase == winnodev1.PhaseConfiguring {
				doomed = &m
				return true, ""
			}
		}
		return false, "none yet"
	})
	if err := w.client.Delete(context.Background(), doomed); err != nil {
		t.Fatalf("deleting Machine %s: %v", doomed.Name, err)
	}
	return doomed.Name
}

// checkGoneSince checks every Machine of before that after lacks.
func (w *world) checkGoneSince(t *testing.T, before, after []clusterv1.Machine) {
	t.Helper()
	left := map[string]bool{}
	for _, m := range after {
		left[m.Name] = true
	}
	for _, m := range before {
		if !left[m.Name] {
			w.checkCAPIMachineGone(t, m.Name)
		}
	}
}

// checkCAPIMachineGone checks that a deleted Machine is gone with its
// instance, and that its host was deconfigured before it was powered off.
func (w *world) checkCAPIMachineGone(t *testing.T, name string) {
	t.Helper()
	testkit.Eventually(t, 3*time.Minute, "Machine "+name+" and its instance gone", func() (bool, string) {
		err := w.client.Get(context.Background(), client.ObjectKey{Namespace: testenv.CAPINamespace, Name: name}, &clusterv1.Machine{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Machine: %v", err)
		}
		err = w.client.Get(context.Background(), client.ObjectKey{Name: capisource.InstanceName(testenv.CAPINamespace, name)}, &winnodev1.WindowsInstance{})
		return apierrors.IsNotFound(err), fmt.Sprintf("instance: %v", err)
	})
	off, kubelet := capiCloud.kubeletAtPowerOff(name)
	if !off {
		t.Errorf("Machine %s is gone and the cloud never powered its host off", name)
	}
	if kubelet {
		t.Errorf("Machine %s's host was powered off with the kubelet still installed: the infrastructure's deletion did not wait for deconfiguration", name)
	}
}
