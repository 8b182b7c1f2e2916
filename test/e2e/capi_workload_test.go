package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/capisource"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/workload"
)

// Cluster API's usual topology: a management cluster where Cluster API and
// winnode run, and a workload cluster, a second real control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) reached only
// through the Cluster's <cluster>-kubeconfig Secret. Push mode:
//   - 0 → 2 Machines: each host becomes a Ready Node of the workload
//     cluster, with Cluster API's nodeRef (which Cluster API sets by
//     looking in the workload cluster) and the Machine's providerID; its
//     WindowsInstance names the Cluster (spec.cluster);
//   - the management cluster gets no Windows Node: its Node list is the
//     same before and after;
//   - in the workload cluster, winnode has its namespace and ServiceAccount;
//   - 2 → 1: the scaled-down Machine's Node is deleted from the workload
//     cluster, its Machine and instance gone.
func TestClusterAPIWorkloadCluster(t *testing.T) {
	w := getWorldOf(t, kindCAPI)
	ctx := context.Background()
	wl, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		t.Fatalf("starting the workload cluster's control plane: %v", err)
	}
	t.Cleanup(func() { _ = wl.Stop() })
	wlKube, err := kubernetes.NewForConfig(wl.Config)
	if err != nil {
		t.Fatal(err)
	}
	mgmtBefore := w.nodeNames(t, w.kube)

	w.startOperator(t, operatorOptions{})
	cluster, err := w.env.CreateCAPIWorkloadCluster(ctx, "workload-a", wl)
	if err != nil {
		t.Fatal(err)
	}
	w.createWinnodeConfigTemplate(t, "workload-a-workers", "wa")
	md := w.createMachineDeployment(t, cluster.Name, "workload-a-md-0", "workload-a-workers")

	w.scaleMachineDeployment(t, md, 2)
	nodes := w.waitWorkloadNodes(t, md, wlKube, 2)
	for _, name := range nodes {
		if _, err := w.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Node %s exists in the management cluster: %v", name, err)
		}
	}
	if got := w.nodeNames(t, w.kube); !slices.Equal(got, mgmtBefore) {
		t.Errorf("the management cluster's Nodes changed: %v, were %v", got, mgmtBefore)
	}
	if _, err := wlKube.CoreV1().ServiceAccounts(Namespace).Get(ctx, workload.ServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("winnode's ServiceAccount in the workload cluster: %v", err)
	}

	before := w.capiMachinesOf(t, md)
	w.scaleMachineDeployment(t, md, 1)
	left := w.waitWorkloadNodes(t, md, wlKube, 1)
	for _, m := range before {
		if !slices.ContainsFunc(w.capiMachinesOf(t, md), func(x clusterv1.Machine) bool { return x.Name == m.Name }) {
			w.checkCAPIMachineGone(t, m.Name)
		}
	}
	testkit.Eventually(t, 2*time.Minute, "the scaled-down Machine's Node gone from the workload cluster", func() (bool, string) {
		got := w.nodeNames(t, wlKube)
		return slices.Equal(got, left), fmt.Sprintf("Nodes %v, want %v", got, left)
	})
	if got := w.nodeNames(t, w.kube); !slices.Equal(got, mgmtBefore) {
		t.Errorf("the management cluster's Nodes changed: %v, were %v", got, mgmtBefore)
	}
}

// nodeNames lists the names of a cluster's Nodes, sorted.
func (w *world) nodeNames(t *testing.T, kube kubernetes.Interface) []string {
	t.Helper()
	list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names
}

// waitWorkloadNodes waits until the MachineDeployment has exactly n
// Machines, none being deleted, each Running with Cluster API's nodeRef to
// a Node of the workload cluster (wlKube) that is its Ready instance's,
// with the Machine's providerID, and returns those Nodes' names, sorted.
func (w *world) waitWorkloadNodes(t *testing.T, md *clusterv1.MachineDeployment, wlKube kubernetes.Interface, n int) []string {
	t.Helper()
	var names []string
	testkit.Eventually(t, 5*time.Minute, fmt.Sprintf("MachineDeployment %s: %d Machines, each a Ready node of the workload cluster", md.Name, n), func() (bool, string) {
		machines := w.capiMachinesOf(t, md)
		if len(machines) != n {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		names = names[:0]
		for i := range machines {
			name, why := w.workloadNodeOf(t, &machines[i], wlKube)
			if name == "" {
				return false, machines[i].Name + ": " + why
			}
			names = append(names, name)
		}
		return true, ""
	})
	slices.Sort(names)
	return names
}

// workloadNodeOf is the workload cluster's Node of Machine m once m is
// Running with its nodeRef and its instance Ready ("" and why not).
func (w *world) workloadNodeOf(t *testing.T, m *clusterv1.Machine, wlKube kubernetes.Interface) (string, string) {
	t.Helper()
	if !m.DeletionTimestamp.IsZero() || m.Status.Phase != string(clusterv1.MachinePhaseRunning) || !m.Status.NodeRef.IsDefined() {
		return "", fmt.Sprintf("phase %q, nodeRef %q", m.Status.Phase, m.Status.NodeRef.Name)
	}
	inst := &winnodev1.WindowsInstance{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Name: capisource.InstanceName(m.Namespace, m.Name)}, inst); err != nil {
		return "", err.Error()
	}
	if want := (winnodev1.ClusterRef{Namespace: m.Namespace, Name: m.Spec.ClusterName}); inst.Spec.Cluster != want {
		t.Errorf("instance %s: spec.cluster %v, want %v", inst.Name, inst.Spec.Cluster, want)
	}
	if inst.Status.Phase != winnodev1.PhaseReady || inst.Status.NodeName != m.Status.NodeRef.Name {
		return "", fmt.Sprintf("instance %s, Node %q", inst.Status.Phase, inst.Status.NodeName)
	}
	node, err := wlKube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", "in the workload cluster: " + err.Error()
	}
	if node.Spec.ProviderID == "" || node.Spec.ProviderID != m.Spec.ProviderID {
		t.Errorf("Node %s has providerID %q, Machine %s %q", node.Name, node.Spec.ProviderID, m.Name, m.Spec.ProviderID)
	}
	return node.Name, ""
}
