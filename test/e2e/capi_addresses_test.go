package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/capisource"
	"github.com/winnode/winnode/internal/testkit"
)

// refusedMachineAddresses are addresses an infrastructure provider may put
// into a Machine's status.addresses that winnode's address policy refuses,
// as it refuses them in a windows-instances entry (issue 25), each with
// what the refusal says of it. The test operator permits 127.0.0.0/8 (the
// simulated hosts' addresses), so loopback is not among them.
var refusedMachineAddresses = []struct{ address, why string }{
	{"0.0.0.0", "unspecified address"},
	{"169.254.169.254", "link-local"},
	// In the workload cluster's Service range (its Cluster names none:
	// kubeadm's 10.96.0.0/12).
	{"10.96.0.10", "Service range"},
}

// createMisreportedMachines creates MachineDeployment name of cluster, of
// one Machine per refusedMachineAddresses, whose simulated infrastructure
// reports that address as the Machine's InternalIP, while its host runs
// at its own address.
func (w *world) createMisreportedMachines(t *testing.T, cluster, name, bootstrap string) *clusterv1.MachineDeployment {
	t.Helper()
	var addrs []string
	for _, a := range refusedMachineAddresses {
		addrs = append(addrs, a.address)
	}
	capiCloud.c.MisreportAddresses(name+"-", addrs...)
	md := w.createMachineDeployment(t, cluster, name, bootstrap)
	w.scaleMachineDeployment(t, md, int32(len(addrs)))
	return md
}

// checkMisreportedMachines waits until the instance of each Machine of md
// (createMisreportedMachines) is refused by the address policy, before
// anything is sent anywhere: Reachable=False with reason AddressNotAllowed
// and a Warning event, both naming the Machine's instance
// (<namespace>.<machine>) and the address, and saying why. Then it checks
// that the Machine's host saw no SSH connection and the Machine has no
// nodeRef.
func (w *world) checkMisreportedMachines(t *testing.T, md *clusterv1.MachineDeployment) {
	t.Helper()
	var seen []string
	testkit.Eventually(t, 5*time.Minute, "each misreported Machine's instance refused by the address policy", func() (bool, string) {
		machines := w.capiMachinesOf(t, md)
		if len(machines) != len(refusedMachineAddresses) {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		seen = seen[:0]
		for _, m := range machines {
			address, why := w.addressRefused(t, capisource.InstanceName(m.Namespace, m.Name))
			if address == "" {
				return false, fmt.Sprintf("Machine %s: %s", m.Name, why)
			}
			seen = append(seen, address)
		}
		return true, ""
	})
	var want []string
	for _, a := range refusedMachineAddresses {
		want = append(want, a.address)
	}
	if slices.Sort(seen); !slices.Equal(seen, slices.Sorted(slices.Values(want))) {
		t.Errorf("the Machines' instances have addresses %v, want %v", seen, want)
	}
	for _, m := range w.capiMachinesOf(t, md) {
		checkHostUntouched(t, capiCloud, m.Name)
		if m.Status.NodeRef.IsDefined() {
			t.Errorf("Machine %s has nodeRef %s", m.Name, m.Status.NodeRef.Name)
		}
	}
}

// addressRefused is the address of instance name once the address policy
// has refused it (Reachable=False with reason AddressNotAllowed, and a
// Warning event), else "" and why not. The condition must name the
// instance and the address and say why it is refused.
func (w *world) addressRefused(t *testing.T, name string) (string, string) {
	t.Helper()
	inst := &winnodev1.WindowsInstance{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Name: name}, inst); err != nil {
		return "", err.Error()
	}
	c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionReachable)
	if c == nil || c.Reason != winnodev1.ReasonAddressNotAllowed {
		return "", fmt.Sprintf("instance %s: conditions %+v", name, inst.Status.Conditions)
	}
	if why := refusal(inst.Spec.Address); c.Status != metav1.ConditionFalse || why == "" ||
		!strings.Contains(c.Message, name) || !strings.Contains(c.Message, inst.Spec.Address+" is") || !strings.Contains(c.Message, why) {
		t.Errorf("instance %s at %s: condition %s %s %q; want False, naming the instance, the address and %q", name, inst.Spec.Address, c.Status, c.Reason, c.Message, why)
	}
	if len(w.eventMessages(t, metav1.NamespaceDefault, name, winnodev1.ReasonAddressNotAllowed)) == 0 {
		return "", fmt.Sprintf("instance %s: no %s event yet", name, winnodev1.ReasonAddressNotAllowed)
	}
	return inst.Spec.Address, ""
}

// checkHostUntouched checks that the simulated host of Machine name saw
// no SSH connection and ran no program over SSH.
func checkHostUntouched(t *testing.T, sc *simCloud, name string) {
	t.Helper()
	h := sc.c.Host(name)
	if h == nil {
		t.Errorf("Machine %s: no simulated host", name)
		return
	}
	if c := h.Counters(); c.Connections != 0 || c.Execs != 0 {
		t.Errorf("Machine %s's host (at %s, reported elsewhere) saw %d SSH connections and %d programs run", name, h.IP(), c.Connections, c.Execs)
	}
}

// refusal is what the address policy's refusal says of address
// (refusedMachineAddresses, or ::, the IPv6 unspecified address), "" for
// another address.
func refusal(address string) string {
	if address == "::" {
		return "unspecified address"
	}
	for _, a := range refusedMachineAddresses {
		if a.address == address {
			return a.why
		}
	}
	return ""
}

// checkDuplicateAddressMachine creates MachineDeployment name of cluster,
// of one Machine whose simulated infrastructure reports the address of a
// configured Machine of md as its own (two Machines reporting the same
// address): it gets no WindowsInstance but a Warning event InstanceConflict
// naming the other Machine's instance, and its host sees no SSH
// connection. The first Machine's instance keeps its host and stays Ready.
func (w *world) checkDuplicateAddressMachine(t *testing.T, cluster, name, bootstrap string, md *clusterv1.MachineDeployment) {
	t.Helper()
	first := w.capiMachinesOf(t, md)[0]
	firstInst := capisource.InstanceName(first.Namespace, first.Name)
	capiCloud.c.MisreportAddresses(name+"-", w.get(t, firstInst).Spec.Address)
	dup := w.createMachineDeployment(t, cluster, name, bootstrap)
	w.scaleMachineDeployment(t, dup, 1)
	var machine clusterv1.Machine
	testkit.Eventually(t, 3*time.Minute, "event InstanceConflict on the Machine reporting another's address", func() (bool, string) {
		machines := w.capiMachinesOf(t, dup)
		if len(machines) != 1 {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		machine = machines[0]
		msgs := w.eventMessages(t, machine.Namespace, machine.Name, "InstanceConflict")
		return slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, firstInst) }), fmt.Sprint(msgs)
	})
	err := w.client.Get(context.Background(), client.ObjectKey{Name: capisource.InstanceName(machine.Namespace, machine.Name)}, &winnodev1.WindowsInstance{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Machine %s, reporting the address of %s, has a WindowsInstance: %v", machine.Name, firstInst, err)
	}
	checkHostUntouched(t, capiCloud, machine.Name)
	if kept := w.get(t, firstInst); kept.Status.Phase != winnodev1.PhaseReady {
		t.Errorf("instance %s, whose address another Machine reports: phase %s, want Ready", firstInst, kept.Status.Phase)
	}
}
