package machineapi

import (
	"testing"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/winnode/winnode/internal/machinesource"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// A Machine becomes an instance only when it is a Windows Machine, not
// ignored, provisioned and with an InternalIP; otherwise the source says
// why it leaves it alone (the reason of winnode_machines_left_alone_total).
func TestProvisioned(t *testing.T) {
	windows := map[string]string{LabelOSID: "Windows"}
	up := func(name string) *builder.OpenShiftMachineBuilder {
		return builder.OpenShiftMachine(Namespace, name).ProviderID("winsim://"+name).Address(corev1.NodeInternalIP, "10.0.0.7")
	}
	for name, tc := range map[string]struct {
		m   *machinev1.Machine
		why string
	}{
		"running Windows":       {up("a").Labels(windows).Phase(machinev1.PhaseRunning).Build(), ""},
		"provisioned Windows":   {up("b").Labels(windows).Phase(machinev1.PhaseProvisioned).Build(), ""},
		"Linux":                 {up("c").Phase(machinev1.PhaseRunning).Build(), machinesource.NotWindows},
		"another OS":            {up("d").Labels(map[string]string{LabelOSID: "Linux"}).Phase(machinev1.PhaseRunning).Build(), machinesource.NotWindows},
		"ignored":               {up("e").Labels(windows).Labels(map[string]string{LabelIgnore: "true"}).Phase(machinev1.PhaseRunning).Build(), machinesource.Ignored},
		"ignore label not true": {up("f").Labels(windows).Labels(map[string]string{LabelIgnore: "false"}).Phase(machinev1.PhaseRunning).Build(), ""},
		"still provisioning":    {up("g").Labels(windows).Phase(machinev1.PhaseProvisioning).Build(), machinesource.NotProvisioned},
		"no phase yet":          {up("h").Labels(windows).Build(), machinesource.NotProvisioned},
		"no address":            {builder.OpenShiftMachine(Namespace, "i").Labels(windows).Phase(machinev1.PhaseRunning).Build(), machinesource.NotProvisioned},
	} {
		got, why := (&MachineReconciler{}).Provisioned(tc.m)
		if why != tc.why {
			t.Errorf("%s: left alone for %q, want %q", name, why, tc.why)
		}
		if why == "" && (got.Address != "10.0.0.7" || got.ProviderID != "winsim://"+tc.m.Name) {
			t.Errorf("%s: address %q, provider ID %q", name, got.Address, got.ProviderID)
		}
	}
}
