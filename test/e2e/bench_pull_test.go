package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
)

// BenchmarkPullMode is Cluster API's Pull mode on the capi world (as
// TestClusterAPIPullMode): for WINNODE_BENCH_PULL_MACHINES (3) Machines,
// one after the other, the time from the Machine's infrastructure
// provisioned (Cluster API's status.initialization.infrastructureProvisioned,
// set when the simulated cloud's VM is up) to a Ready Node of the workload
// cluster with the Machine's providerID: the host's simulated
// cloudbase-init running the bootstrap data, `winnode-agent join`
// installing and starting the services from the image, and the kubelet's
// TLS bootstrap with the bootstrap token the operator issued. It prints
// time_to_ready_pull_mode_seconds, the median, as raw seconds: the join
// floor it compares with (floor_join_seconds) is BenchmarkTimeToReady's,
// measured on that benchmark's world, and the ratio is taken there
// (docs/performance.md). Both sides are watched by polling every 100 ms,
// which bounds the error of each time.
func BenchmarkPullMode(b *testing.B) {
	n := max(benchEnv(b, "WINNODE_BENCH_PULL_MACHINES", 3), 1)
	w := getWorldOf(b, kindCAPI)
	ctx := context.Background()
	wl, wlKube := startWorkloadControlPlane(b)
	img := w.pullImage(b, "winnode-pull-bench")
	w.startOperator(b, operatorOptions{version: "dev"})
	cluster, err := w.env.CreateCAPIWorkloadCluster(ctx, "bench-pull", wl)
	if err != nil {
		b.Fatal(err)
	}
	// The computer name prefix TestClusterAPIPullMode's checks expect (pullNodeOf).
	w.createWinnodeConfigTemplateOf(b, testenv.CAPINamespace, "bench-pull-workers", "wp", bootstrapv1.ModePull)
	md := w.createMachineDeploymentFrom(b, testenv.CAPINamespace, cluster.Name, "bench-pull-md-0", "bench-pull-workers", img)
	for i := 0; i < b.N; i++ {
		var times []float64
		for m := range n {
			// One more Machine, the others Ready already.
			seen := map[string]bool{}
			for _, old := range w.capiMachinesOf(b, md) {
				seen[old.Name] = true
			}
			w.scaleMachineDeployment(b, md, int32(m+1))
			d := w.pullMachineToReady(b, md, wlKube, seen)
			b.Logf("Pull Machine %d: %.2f s from infrastructure provisioned to a Ready Node", m+1, d.Seconds())
			times = append(times, d.Seconds())
			w.waitPullNodes(b, md, wlKube, m+1)
		}
		fmt.Printf("pull mode: %d Machines, one at a time: %v s\n", n, times)
		figure(b, "time_to_ready_pull_mode_seconds", median(times), "s")
		w.scaleMachineDeployment(b, md, 0)
	}
}

// pullMachineToReady waits for the MachineDeployment's new Machine (one not
// in seen) to have its infrastructure provisioned, then for its Node (by
// providerID) to be Ready in the workload cluster, and returns the time
// between the two, as seen by polling every 100 ms.
func (w *world) pullMachineToReady(b *testing.B, md *clusterv1.MachineDeployment, wlKube kubernetes.Interface, seen map[string]bool) time.Duration {
	b.Helper()
	ctx := context.Background()
	var machine *clusterv1.Machine
	var provisioned time.Time
	poll := func(what string, timeout time.Duration, done func() (bool, error)) {
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return done() }); err != nil {
			b.Fatalf("Pull Machine of %s: waiting for %s: %v", md.Name, what, err)
		}
	}
	poll("its infrastructure provisioned", 5*time.Minute, func() (bool, error) {
		for _, m := range w.capiMachinesOf(b, md) {
			if p := m.Status.Initialization.InfrastructureProvisioned; !seen[m.Name] && p != nil && *p {
				machine, provisioned = &m, time.Now()
				return true, nil
			}
		}
		return false, nil
	})
	var ready time.Time
	poll(fmt.Sprintf("a Ready Node of Machine %s", machine.Name), 8*time.Minute, func() (bool, error) {
		if machine.Spec.ProviderID == "" {
			var m clusterv1.Machine
			if err := w.client.Get(ctx, client.ObjectKeyFromObject(machine), &m); err != nil {
				return false, nil
			}
			machine = &m
		}
		nodes, err := wlKube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // the next poll asks again
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if machine.Spec.ProviderID != "" && n.Spec.ProviderID == machine.Spec.ProviderID && nodeReadyStatus(n) == corev1.ConditionTrue {
				ready = time.Now()
				return true, nil
			}
		}
		return false, nil
	})
	return ready.Sub(provisioned)
}

// median of xs (not empty).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
