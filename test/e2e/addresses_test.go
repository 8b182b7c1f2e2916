package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// Addresses that are not a Windows host's (cloud metadata, a Service IP, a
// cluster DNS name) are refused before any connection: condition Reachable
// False with reason AddressNotAllowed and a Warning event naming the
// address and --allow-addresses. The operator here permits only the
// simulated hosts' loopback addresses.
func TestAddressesNotAllowed(t *testing.T) {
	w := getWorld(t)
	w.startOperator(t, operatorOptions{})
	for name, address := range map[string]string{
		"metadata":        "169.254.169.254",
		"service-ip":      "10.96.0.1",
		"service-name":    "kubernetes.default.svc",
		"cluster-dns-pod": "10-0-0-7.default.pod.cluster.local",
	} {
		inst := builder.Instance(name).Host(address, "Administrator").Manual().Build()
		if err := w.client.Create(context.Background(), inst); err != nil {
			t.Fatalf("creating WindowsInstance %s: %v", name, err)
		}
		t.Cleanup(func() { w.forget(name) })
	}
	for name, address := range map[string]string{"metadata": "169.254.169.254", "service-ip": "10.96.0.1", "service-name": "kubernetes.default.svc", "cluster-dns-pod": "cluster.local"} {
		got := w.waitCondition(t, name, winnodev1.ConditionReachable, "False", winnodev1.ReasonAddressNotAllowed, time.Minute)
		if msg := got.Status.LastError; !strings.Contains(msg, address) || !strings.Contains(msg, "--allow-addresses") {
			t.Errorf("%s: lastError %q, want the address %s and --allow-addresses", name, msg, address)
		}
		if got.Status.HostKey != "" || got.Status.NodeName != "" {
			t.Errorf("%s: the address was connected to: host key %q, node %q", name, got.Status.HostKeyFingerprint, got.Status.NodeName)
		}
		if msgs := w.eventMessages(t, metav1.NamespaceDefault, name, winnodev1.ReasonAddressNotAllowed); len(msgs) == 0 {
			t.Errorf("%s: no %s event", name, winnodev1.ReasonAddressNotAllowed)
		}
	}
}
