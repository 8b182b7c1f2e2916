package configure

import (
	"context"
	"testing"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// In a workload cluster (KubeletServingMetrics) windows_exporter serves
// with the kubelet's certificate: nothing is issued or uploaded, whatever
// address the kubelet picks, and no node name is needed yet.
func TestMetricsFactsKubeletServing(t *testing.T) {
	c := &Configurer{KubeletServingMetrics: true}
	for _, address := range []string{"10.1.0.5", "win-1.example.com"} {
		inst := builder.Instance("capi").Build()
		inst.Spec.Address = address
		facts, key, err := c.metricsFacts(context.Background(), inst, &plan.Info{Hostname: "WIN-1"})
		if err != nil || facts == nil || !facts.KubeletServing || len(facts.CertPEM) > 0 || key != nil {
			t.Errorf("address %s: facts %+v, key %q, %v; want the kubelet's certificate only", address, facts, key, err)
		}
	}
	if facts, _, err := (&Configurer{}).metricsFacts(context.Background(), builder.Instance("plain").Build(), &plan.Info{}); facts != nil || err != nil {
		t.Errorf("no metrics at all: %+v, %v", facts, err)
	}
}
