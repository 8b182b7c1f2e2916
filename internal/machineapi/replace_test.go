package machineapi

import (
	"testing"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// Only a host that accepted a key once and refuses the operator's now is
// one the rotation left behind; unreachable hosts and hosts that never
// accepted any key are not.
func TestKeyRefused(t *testing.T) {
	reachable := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: winnodev1.ConditionReachable, Status: status, Reason: reason}}
	}
	for name, tc := range map[string]struct {
		accepted string
		conds    []metav1.Condition
		want     bool
	}{
		"rotated key refused":   {"SHA256:old", reachable(metav1.ConditionFalse, winnodev1.ReasonAuthFailed), true},
		"never accepted a key":  {"", reachable(metav1.ConditionFalse, winnodev1.ReasonAuthFailed), false},
		"unreachable":           {"SHA256:old", reachable(metav1.ConditionFalse, winnodev1.ReasonUnreachable), false},
		"reachable":             {"SHA256:new", reachable(metav1.ConditionTrue, winnodev1.ReasonConnected), false},
		"not yet tried (fresh)": {"", nil, false},
	} {
		inst := builder.Instance("").KeyFingerprint(tc.accepted).Conditions(tc.conds...).Build()
		if got := keyRefused(inst); got != tc.want {
			t.Errorf("%s: keyRefused = %t, want %t", name, got, tc.want)
		}
	}
}

// Only a Machine a MachineSet controls is replaced; a lone Machine would
// be gone for good.
func TestOwnedByMachineSet(t *testing.T) {
	owned := builder.OpenShiftMachine(Namespace, "m").ControlledBy("ms").Build()
	if !ownedByMachineSet(owned) {
		t.Error("a Machine controlled by a MachineSet is not seen as such")
	}
	notController := owned.DeepCopy()
	notController.OwnerReferences[0].Controller = nil
	for name, m := range map[string]*machinev1.Machine{"lone": builder.OpenShiftMachine(Namespace, "lone").Build(), "owner but not controller": notController} {
		if ownedByMachineSet(m) {
			t.Errorf("%s Machine seen as controlled by a MachineSet", name)
		}
	}
}

// The address is the first non-empty InternalIP, never an ExternalIP.
func TestInternalIP(t *testing.T) {
	m := builder.OpenShiftMachine(Namespace, "m").Address(corev1.NodeExternalIP, "203.0.113.9").
		Address(corev1.NodeInternalIP, "").Address(corev1.NodeInternalIP, "10.0.0.7").Build()
	if got := internalIP(m); got != "10.0.0.7" {
		t.Errorf("internalIP = %q, want 10.0.0.7", got)
	}
	if got := internalIP(&machinev1.Machine{}); got != "" {
		t.Errorf("internalIP of a Machine without addresses = %q", got)
	}
}
