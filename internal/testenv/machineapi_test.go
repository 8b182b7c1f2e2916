package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// machineAPIScheme knows the built-in types and the Machine API's.
func machineAPIScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := machinev1beta1.Install(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// machinesOf lists the MachineSet's Machines (by controller reference).
func machinesOf(ctx context.Context, c client.Client, ms string) ([]machinev1beta1.Machine, error) {
	var list machinev1beta1.MachineList
	if err := c.List(ctx, &list, client.InNamespace(MachineAPINamespace)); err != nil {
		return nil, err
	}
	var own []machinev1beta1.Machine
	for _, m := range list.Items {
		if ref := metav1.GetControllerOf(&m); ref != nil && ref.Kind == "MachineSet" && ref.Name == ms {
			own = append(own, m)
		}
	}
	return own, nil
}

func phase(m *machinev1beta1.Machine) string {
	if m.Status.Phase == nil {
		return ""
	}
	return *m.Status.Phase
}

func internalIP(m *machinev1beta1.Machine) string {
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// The OpenShift Machine API's own controllers run in the test world: the
// MachineSet controller creates Machines, the Machine controller has the
// winsim provider create their instances in the simulated cloud and
// provisions them, nodelink links a Node that appears with an instance's
// provider ID, and scaling down deletes Machines (the one without a Node
// first, MAO's Random delete policy), their instances, and, for a linked
// Machine, its Node (after the drain controller's drain).
func TestMachineAPIControllers(t *testing.T) {
	_, cloud, c := cloudWorld(t, machineAPIScheme(t), func(cloudURL string) Options {
		return Options{OpenShift: true, MachineAPICloudURL: cloudURL}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	userData := []byte("<powershell>simulated user data</powershell>")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "windows-user-data", Namespace: MachineAPINamespace},
		Data: map[string][]byte{"userData": userData}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	phases := watchPhases(t, ctx, c, &machinev1beta1.MachineList{}, MachineAPINamespace, phase)
	ms := WinsimMachineSet("winsim-worker", secret.Name, 2, map[string]string{"machine.openshift.io/os-id": "Windows"})
	if err := c.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}

	var machines []machinev1beta1.Machine
	testkit.Eventually(t, 90*time.Second, "two Machines Provisioned", func() (bool, string) {
		var err error
		if machines, err = machinesOf(ctx, c, ms.Name); err != nil {
			return false, err.Error()
		}
		var seen []string
		done := len(machines) == 2
		for i := range machines {
			m := &machines[i]
			seen = append(seen, fmt.Sprintf("%s phase=%q providerID=%v ip=%q", m.Name, phase(m), m.Spec.ProviderID, internalIP(m)))
			done = done && phase(m) == machinev1beta1.PhaseProvisioned && m.Spec.ProviderID != nil && internalIP(m) != ""
		}
		return done, strings.Join(seen, "; ")
	})
	for _, m := range machines {
		cloud.mu.Lock()
		inst, got := cloud.instances[m.Name], string(cloud.userData[m.Name])
		cloud.mu.Unlock()
		if *m.Spec.ProviderID != inst.ProviderID || internalIP(&m) != inst.Address || m.Annotations["machine.openshift.io/instance-state"] != "running" {
			t.Errorf("Machine %s: providerID %s, address %s, annotations %v; the cloud's instance is %+v", m.Name, *m.Spec.ProviderID, internalIP(&m), m.Annotations, inst)
		}
		if got != string(userData) {
			t.Errorf("instance %s booted with user data %q, want the Secret's %q", m.Name, got, userData)
		}
	}

	linked, unlinked := machines[0], machines[1]
	node := linkNode(t, ctx, c, &linked)
	scaleDown(t, ctx, c, cloud, ms, 1, unlinked.Name)
	scaleDown(t, ctx, c, cloud, ms, 0, linked.Name)
	testkit.Eventually(t, 90*time.Second, "the deleted Machine's Node deleted", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	invalidProviderSpec(t, ctx, c, cloud)
	for name, want := range map[string]string{
		linked.Name:   "Provisioning → Provisioned → Running → Deleting",
		unlinked.Name: "Provisioning → Provisioned → Deleting",
	} {
		if got := phases.of(name); got != want {
			t.Errorf("Machine %s went through phases %s, want %s", name, got, want)
		}
	}
}

// linkNode creates a Node as a kubelet on m's instance would (its provider
// ID and InternalIP) and waits for nodelink to set m's nodeRef and the
// Machine controller to move it to Running.
func linkNode(t *testing.T, ctx context.Context, c client.Client, m *machinev1beta1.Machine) *corev1.Node {
	t.Helper()
	// Named as the kubelet names it: the host name, lower-cased.
	var hostname string
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeHostName {
			hostname = strings.ToLower(a.Address)
		}
	}
	node := builder.Node(hostname).ProviderID(*m.Spec.ProviderID).Build()
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	// A patch: the node controllers write the new Node at once.
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internalIP(m)}}
	if err := c.Status().Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 90*time.Second, "Machine "+m.Name+" linked to Node "+node.Name+" and Running", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		seen := fmt.Sprintf("phase=%q nodeRef=%v", phase(m), m.Status.NodeRef)
		return m.Status.NodeRef != nil && m.Status.NodeRef.Name == node.Name && phase(m) == machinev1beta1.PhaseRunning, seen
	})
	return node
}

// invalidProviderSpec: a Machine whose providerSpec is another provider's
// is an invalid configuration (machine.InvalidMachineConfiguration), which
// the Machine controller turns into phase Failed, as for a real provider,
// and no instance is created.
func invalidProviderSpec(t *testing.T, ctx context.Context, c client.Client, cloud *testCloud) {
	t.Helper()
	m := builder.OpenShiftMachine(MachineAPINamespace, "winsim-misconfigured").
		Labels(map[string]string{machinev1beta1.MachineClusterIDLabel: InfrastructureName}).
		ProviderSpec(&runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","userDataSecret":{"name":"windows-user-data"}}`)}).
		Build()
	if err := c.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 90*time.Second, "Machine "+m.Name+" Failed as an invalid configuration", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		var reason, message string
		if m.Status.ErrorReason != nil && m.Status.ErrorMessage != nil {
			reason, message = string(*m.Status.ErrorReason), *m.Status.ErrorMessage
		}
		seen := fmt.Sprintf("phase=%q errorReason=%q errorMessage=%q", phase(m), reason, message)
		return phase(m) == machinev1beta1.PhaseFailed && reason == string(machinev1beta1.InvalidConfigurationMachineError) &&
			strings.Contains(message, m.Name), seen
	})
	cloud.mu.Lock()
	defer cloud.mu.Unlock()
	if _, ok := cloud.instances[m.Name]; ok {
		t.Errorf("an instance was created for misconfigured Machine %s", m.Name)
	}
}

// scaleDown sets the MachineSet's replicas and waits until Machine gone is
// deleted (its finalizer released) and its instance was deleted in the cloud.
func scaleDown(t *testing.T, ctx context.Context, c client.Client, cloud *testCloud, ms *machinev1beta1.MachineSet, replicas int32, gone string) {
	t.Helper()
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Spec.Replicas = &replicas
	if err := c.Patch(ctx, ms, patch); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 90*time.Second, fmt.Sprintf("scaled to %d: Machine %s and its instance deleted", replicas, gone), func() (bool, string) {
		machines, err := machinesOf(ctx, c, ms.Name)
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, m := range machines {
			names = append(names, fmt.Sprintf("%s(%s)", m.Name, phase(&m)))
		}
		seen := fmt.Sprintf("machines %v, cloud deletions %v", names, cloud.deletions())
		if len(machines) != int(replicas) || !strings.Contains(" "+strings.Join(cloud.deletions(), " ")+" ", " "+gone+" ") {
			return false, seen
		}
		for _, m := range machines {
			if m.Name == gone {
				return false, seen
			}
		}
		return true, seen
	})
}
