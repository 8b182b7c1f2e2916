package testenv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// capiMachinesOf lists the MachineDeployment's Machines (by Cluster API's
// deployment-name label), sorted by name.
func capiMachinesOf(ctx context.Context, c client.Client, md string) ([]clusterv1.Machine, error) {
	var list clusterv1.MachineList
	if err := c.List(ctx, &list, client.InNamespace(CAPINamespace), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

func capiAddress(m *clusterv1.Machine, typ clusterv1.MachineAddressType) string {
	for _, a := range m.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return ""
}

// Cluster API's own controllers run in the test world: with a Cluster whose
// infrastructure and control plane are the winsim providers', a
// MachineDeployment of 2 gets a MachineSet and 2 Machines, the WinsimMachine
// controller creates their instances in the simulated cloud with the
// bootstrap data and Cluster API provisions the Machines from what it
// reports; a Node that appears with an instance's provider ID becomes its
// Machine's nodeRef (through the ClusterCache), and scaling down deletes
// the Machine without a Node first, then the one with a Node (drained, its
// Node deleted), each with its WinsimMachine and its instance.
func TestCAPIControllers(t *testing.T) {
	s, err := CAPIScheme()
	if err != nil {
		t.Fatal(err)
	}
	env, cloud, c := cloudWorld(t, s, func(cloudURL string) Options { return Options{ClusterAPICloudURL: cloudURL} })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	cluster, err := env.CreateCAPICluster(ctx, "winsim")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Cluster %s provisioned, control plane initialized and reachable after %s", cluster.Name, time.Since(start).Round(100*time.Millisecond))
	userData := []byte("#ps1_sysnative\n# simulated bootstrap data\n")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "windows-bootstrap", Namespace: CAPINamespace},
		Type: clusterv1.ClusterSecretType, Data: map[string][]byte{"value": userData, "format": []byte("cloud-config")}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	phases := watchPhases(t, ctx, c, &clusterv1.MachineList{}, CAPINamespace, func(m *clusterv1.Machine) string { return m.Status.Phase })
	md, template := WinsimMachineDeployment(cluster.Name, "windows", 2, clusterv1.Bootstrap{DataSecretName: ptr.To(secret.Name)})
	for _, obj := range []client.Object{template, md} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	machines := waitProvisioned(t, ctx, c, cloud, md.Name, 2)
	for _, m := range machines {
		cloud.mu.Lock()
		inst, got := cloud.instances[m.Name], string(cloud.userData[m.Name])
		cloud.mu.Unlock()
		if m.Spec.ProviderID != inst.ProviderID || capiAddress(&m, clusterv1.MachineInternalIP) != inst.Address ||
			capiAddress(&m, clusterv1.MachineHostName) != inst.Hostname {
			t.Errorf("Machine %s: providerID %s, addresses %v; the cloud's instance is %+v", m.Name, m.Spec.ProviderID, m.Status.Addresses, inst)
		}
		if got != string(userData) {
			t.Errorf("instance %s booted with user data %q, want the bootstrap Secret's %q", m.Name, got, userData)
		}
		checkWinsimMachine(t, ctx, c, &m, inst)
	}

	linked, unlinked := machines[0], machines[1]
	node := linkCAPINode(t, ctx, c, &linked)
	scaleCAPI(t, ctx, c, cloud, md, 1, unlinked.Name)
	scaleCAPI(t, ctx, c, cloud, md, 0, linked.Name)
	testkit.Eventually(t, 90*time.Second, "the deleted Machine's Node deleted", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	bootstrapByConfigRef(t, ctx, c, cloud, cluster.Name)
	// Pending and Provisioning may be too short to be stored: how long
	// depends on how soon the provider answers.
	for name, want := range map[string]string{
		linked.Name:   "Provisioned → Running → Deleting",
		unlinked.Name: "Provisioned → Deleting",
	} {
		if got := phases.of(name); strings.TrimPrefix(strings.TrimPrefix(got, "Pending → "), "Provisioning → ") != want {
			t.Errorf("Machine %s went through phases %s, want [Pending → ][Provisioning → ]%s", name, got, want)
		}
	}
}

// bootstrapByConfigRef: a MachineDeployment whose bootstrap is a
// WinnodeConfigTemplate (winnode's CRDs, installed by default) gets a
// WinnodeConfig per Machine from Cluster API; with the test playing
// winnode's bootstrap provider (it writes the data Secret and the config's
// status.dataSecretName and initialization.dataSecretCreated), Cluster API
// copies the Secret's name into the Machine and the winsim provider boots
// the instance with its data.
func bootstrapByConfigRef(t *testing.T, ctx context.Context, c client.Client, cloud *testCloud, cluster string) {
	t.Helper()
	tmpl := &bootstrapv1.WinnodeConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "windows-winnode", Namespace: CAPINamespace}}
	md, infra := WinsimMachineDeployment(cluster, "windows-winnode", 1, WinnodeConfigTemplateBootstrap(tmpl.Name))
	for _, obj := range []client.Object{tmpl, infra, md} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	var cfg bootstrapv1.WinnodeConfig
	testkit.Eventually(t, 90*time.Second, "a WinnodeConfig owned by a Machine of "+md.Name, func() (bool, string) {
		var list bootstrapv1.WinnodeConfigList
		if err := c.List(ctx, &list, client.InNamespace(CAPINamespace), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md.Name}); err != nil {
			return false, err.Error()
		}
		for _, item := range list.Items {
			for _, ref := range item.OwnerReferences {
				if ref.Kind == "Machine" {
					cfg = item
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d WinnodeConfigs", len(list.Items))
	})
	userData := []byte("#ps1_sysnative\n# simulated bootstrap data of " + cfg.Name + "\n")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cfg.Name, Namespace: CAPINamespace},
		Type: clusterv1.ClusterSecretType, Data: map[string][]byte{"value": userData, "format": []byte("cloud-config")}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cfg.DeepCopy())
	cfg.Status.DataSecretName = secret.Name
	cfg.Status.Initialization.DataSecretCreated = ptr.To(true)
	if err := c.Status().Patch(ctx, &cfg, patch); err != nil {
		t.Fatal(err)
	}
	m := waitProvisioned(t, ctx, c, cloud, md.Name, 1)[0]
	cloud.mu.Lock()
	got := string(cloud.userData[m.Name])
	cloud.mu.Unlock()
	if ptr.Deref(m.Spec.Bootstrap.DataSecretName, "") != secret.Name || got != string(userData) {
		t.Errorf("Machine %s: bootstrap data Secret %v, its instance booted with %q; want Secret %s, %q",
			m.Name, m.Spec.Bootstrap.DataSecretName, got, secret.Name, userData)
	}
}

// waitProvisioned waits for n Machines of the MachineDeployment in phase
// Provisioned with a provider ID and an InternalIP, and returns them.
func waitProvisioned(t *testing.T, ctx context.Context, c client.Client, cloud *testCloud, md string, n int) []clusterv1.Machine {
	t.Helper()
	var machines []clusterv1.Machine
	testkit.Eventually(t, 90*time.Second, fmt.Sprintf("%d Machines Provisioned", n), func() (bool, string) {
		var err error
		if machines, err = capiMachinesOf(ctx, c, md); err != nil {
			return false, err.Error()
		}
		var seen []string
		done := len(machines) == n
		for i := range machines {
			m := &machines[i]
			seen = append(seen, fmt.Sprintf("%s phase=%q providerID=%q ip=%q", m.Name, m.Status.Phase, m.Spec.ProviderID, capiAddress(m, clusterv1.MachineInternalIP)))
			done = done && m.Status.GetTypedPhase() == clusterv1.MachinePhaseProvisioned && m.Spec.ProviderID != "" &&
				capiAddress(m, clusterv1.MachineInternalIP) != ""
		}
		return done, strings.Join(seen, "; ")
	})
	return machines
}

// checkWinsimMachine checks what the WinsimMachine of m reports: the
// instance's provider ID, provisioned, Ready, owned by m.
func checkWinsimMachine(t *testing.T, ctx context.Context, c client.Client, m *clusterv1.Machine, inst testInstance) {
	t.Helper()
	wm := &unstructured.Unstructured{}
	wm.SetAPIVersion(WinsimInfrastructureGroup + "/" + WinsimProviderVersion)
	wm.SetKind(WinsimMachineKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, wm); err != nil {
		t.Fatal(err)
	}
	providerID, _, _ := unstructured.NestedString(wm.Object, "spec", "providerID")
	provisioned, _, _ := unstructured.NestedBool(wm.Object, "status", "initialization", "provisioned")
	id, _, _ := unstructured.NestedString(wm.Object, "status", "instanceID")
	conds, _, _ := unstructured.NestedSlice(wm.Object, "status", "conditions")
	owner := metav1.GetControllerOf(wm)
	if providerID != inst.ProviderID || !provisioned || id != inst.ID || len(conds) != 1 ||
		!strings.Contains(fmt.Sprint(conds[0]), "status:True type:Ready") || owner == nil || owner.Name != m.Name {
		t.Errorf("WinsimMachine %s: spec.providerID %q, provisioned %v, instanceID %q, conditions %v, controller %v; want instance %+v of Machine %s",
			wm.GetName(), providerID, provisioned, id, conds, owner, inst, m.Name)
	}
	if !controllerHasFinalizer(wm) {
		t.Errorf("WinsimMachine %s has no finalizer %v", wm.GetName(), wm.GetFinalizers())
	}
}

func controllerHasFinalizer(wm *unstructured.Unstructured) bool {
	return slices.Contains(wm.GetFinalizers(), "infrastructure.winsim.winnode.io/winsimmachine")
}

// linkCAPINode creates a Ready Node as a kubelet on m's instance would (its
// provider ID, host name and InternalIP) and waits for the Machine
// controller to set m's nodeRef and phase Running.
func linkCAPINode(t *testing.T, ctx context.Context, c client.Client, m *clusterv1.Machine) *corev1.Node {
	t.Helper()
	node := builder.Node(strings.ToLower(capiAddress(m, clusterv1.MachineHostName))).ProviderID(m.Spec.ProviderID).Build()
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: capiAddress(m, clusterv1.MachineInternalIP)}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := c.Status().Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 90*time.Second, "Machine "+m.Name+" linked to Node "+node.Name+" and Running", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		seen := fmt.Sprintf("phase=%q nodeRef=%q", m.Status.Phase, m.Status.NodeRef.Name)
		return m.Status.NodeRef.Name == node.Name && m.Status.GetTypedPhase() == clusterv1.MachinePhaseRunning, seen
	})
	return node
}

// scaleCAPI sets the MachineDeployment's replicas and waits until Machine
// gone and its WinsimMachine are deleted and its instance was deleted in the
// cloud.
func scaleCAPI(t *testing.T, ctx context.Context, c client.Client, cloud *testCloud, md *clusterv1.MachineDeployment, replicas int32, gone string) {
	t.Helper()
	var infra string
	if m, err := capiMachinesOf(ctx, c, md.Name); err == nil {
		for _, machine := range m {
			if machine.Name == gone {
				infra = machine.Spec.InfrastructureRef.Name
			}
		}
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = &replicas
	if err := c.Patch(ctx, md, patch); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 90*time.Second, fmt.Sprintf("scaled to %d: Machine %s, its WinsimMachine and its instance deleted", replicas, gone), func() (bool, string) {
		machines, err := capiMachinesOf(ctx, c, md.Name)
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, m := range machines {
			names = append(names, fmt.Sprintf("%s(%s)", m.Name, m.Status.Phase))
		}
		wm := &unstructured.Unstructured{}
		wm.SetAPIVersion(WinsimInfrastructureGroup + "/" + WinsimProviderVersion)
		wm.SetKind(WinsimMachineKind)
		err = c.Get(ctx, client.ObjectKey{Namespace: CAPINamespace, Name: infra}, wm)
		seen := fmt.Sprintf("machines %v, WinsimMachine %s: %v, cloud deletions %v", names, infra, err, cloud.deletions())
		return len(machines) == int(replicas) && !slices.ContainsFunc(machines, func(m clusterv1.Machine) bool { return m.Name == gone }) &&
			apierrors.IsNotFound(err) && slices.Contains(cloud.deletions(), gone), seen
	})
}
