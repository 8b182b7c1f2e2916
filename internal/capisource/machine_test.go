package capisource

import (
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Only Machines whose bootstrap config is winnode's are winnode's: a
// kubeadm-bootstrapped Linux Machine, or a kind of the same name in another
// group, is not.
func TestBootstrappedByWinnode(t *testing.T) {
	for _, tc := range []struct {
		ref  clusterv1.ContractVersionedObjectReference
		want bool
	}{
		{clusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.winnode.io", Kind: "WinnodeConfig", Name: "a"}, true},
		{clusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfig", Name: "a"}, false},
		{clusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.example.com", Kind: "WinnodeConfig", Name: "a"}, false},
		{clusterv1.ContractVersionedObjectReference{}, false},
	} {
		m := &clusterv1.Machine{Spec: clusterv1.MachineSpec{Bootstrap: clusterv1.Bootstrap{ConfigRef: tc.ref}}}
		if got := bootstrappedByWinnode(m); got != tc.want {
			t.Errorf("%+v: %t, want %t", tc.ref, got, tc.want)
		}
	}
}

// Machines of the same name in two namespaces get two instances.
func TestInstanceName(t *testing.T) {
	if a, b := InstanceName("team-a", "win-0"), InstanceName("team-b", "win-0"); a == b || a != "team-a.win-0" {
		t.Errorf("InstanceName: %q and %q", a, b)
	}
}

// The address is the first non-empty InternalIP.
func TestInternalIP(t *testing.T) {
	m := &clusterv1.Machine{Status: clusterv1.MachineStatus{Addresses: clusterv1.MachineAddresses{
		{Type: clusterv1.MachineExternalIP, Address: "203.0.113.9"},
		{Type: clusterv1.MachineInternalIP, Address: "10.0.0.8"},
	}}}
	if got := internalIP(m); got != "10.0.0.8" {
		t.Errorf("internalIP = %q, want 10.0.0.8", got)
	}
}
