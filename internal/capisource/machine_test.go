package capisource

import (
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/winnode/winnode/internal/machinesource"
	"github.com/winnode/winnode/internal/testkit/builder"
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
		m := builder.CAPIMachine("ns", "m").Bootstrap(tc.ref.APIGroup, tc.ref.Kind, tc.ref.Name).Build()
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
	m := builder.CAPIMachine("ns", "m").Address(clusterv1.MachineExternalIP, "203.0.113.9").
		Address(clusterv1.MachineInternalIP, "10.0.0.8").Build()
	if got := internalIP(m); got != "10.0.0.8" {
		t.Errorf("internalIP = %q, want 10.0.0.8", got)
	}
}

// A Machine becomes an instance only when winnode bootstraps it and its
// infrastructure is provisioned, with an InternalIP and a provider ID;
// otherwise the source says why it leaves it alone (the reason of
// winnode_machines_left_alone_total).
func TestProvisioned(t *testing.T) {
	ours := func(name string) *builder.CAPIMachineBuilder {
		return builder.CAPIMachine("ns", name).Bootstrap("bootstrap.winnode.io", "WinnodeConfig", name)
	}
	for name, tc := range map[string]struct {
		m   *clusterv1.Machine
		why string
	}{
		"provisioned": {ours("a").InfrastructureProvisioned().ProviderID("winsim://a").Address(clusterv1.MachineInternalIP, "10.0.0.8").Build(), ""},
		"kubeadm's": {builder.CAPIMachine("ns", "b").Bootstrap("bootstrap.cluster.x-k8s.io", "KubeadmConfig", "b").
			InfrastructureProvisioned().ProviderID("winsim://b").Address(clusterv1.MachineInternalIP, "10.0.0.8").Build(), machinesource.NotWindows},
		"infrastructure not provisioned": {ours("c").ProviderID("winsim://c").Address(clusterv1.MachineInternalIP, "10.0.0.8").Build(), machinesource.NotProvisioned},
		"no provider ID":                 {ours("d").InfrastructureProvisioned().Address(clusterv1.MachineInternalIP, "10.0.0.8").Build(), machinesource.NotProvisioned},
		"no InternalIP":                  {ours("e").InfrastructureProvisioned().ProviderID("winsim://e").Address(clusterv1.MachineExternalIP, "203.0.113.9").Build(), machinesource.NotProvisioned},
	} {
		got, why := (&MachineReconciler{}).Provisioned(tc.m)
		if why != tc.why {
			t.Errorf("%s: left alone for %q, want %q", name, why, tc.why)
		}
		if why == "" && (got.Address != "10.0.0.8" || got.ProviderID != "winsim://a") {
			t.Errorf("%s: address %q, provider ID %q", name, got.Address, got.ProviderID)
		}
	}
}
