package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/capisource"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
	"github.com/winnode/winnode/internal/workload"
)

// Cluster API's usual topology: a management cluster where Cluster API and
// winnode run, and a workload cluster, a second real control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) reached only
// through the Cluster's <cluster>-kubeconfig Secret. Push mode:
//   - 0 → 2 → 3 Machines: each host becomes a Ready Node of the workload
//     cluster, with Cluster API's nodeRef (which Cluster API sets by
//     looking in the workload cluster) and the Machine's providerID; its
//     WindowsInstance names the Cluster (spec.cluster);
//   - the management cluster gets no Windows Node: its Node list is the
//     same before, at each step and after;
//   - in the workload cluster, winnode has its namespace and ServiceAccount;
//   - a Ready node's windows_exporter serves its metrics over HTTPS on 9182
//     with the kubelet's serving certificate, verified against the
//     workload cluster's CA with the node's name as the server name
//     (checkWorkloadNodeMetrics), and the workload cluster's Service
//     windows-exporter has EndpointSlices listing the Ready nodes
//     (checkWorkloadSlices);
//   - Machines of a second MachineDeployment whose infrastructure reports
//     addresses the address policy refuses (unspecified, link-local, the
//     workload cluster's Service range) are refused by name, as a
//     windows-instances entry would be, and their hosts see no SSH
//     connection (checkMisreportedMachines);
//   - a Machine whose infrastructure reports the address of a Ready
//     Machine as its own gets no instance but a Warning event
//     InstanceConflict naming that Machine's instance; its host sees no
//     SSH connection (checkDuplicateAddressMachine);
//   - 2 → 3: the new Machine is deleted while its host is being
//     configured; it is replaced, and gone with its instance, its host
//     deconfigured before it was powered off;
//   - 3 → 1: the scaled-down Machines' Nodes are deleted from the workload
//     cluster, their Machines and instances gone.
func TestClusterAPIWorkloadCluster(t *testing.T) {
	w := getWorldOf(t, kindCAPI)
	ctx := context.Background()
	wl, wlKube := startWorkloadControlPlane(t)
	mgmtBefore := w.nodeNames(t, w.kube)

	w.startOperator(t, operatorOptions{})
	cluster, err := w.env.CreateCAPIWorkloadCluster(ctx, "workload-a", wl)
	if err != nil {
		t.Fatal(err)
	}
	w.createWinnodeConfigTemplate(t, "workload-a-workers", "wa")
	md := w.createMachineDeployment(t, cluster.Name, "workload-a-md-0", "workload-a-workers")

	bad := w.createMisreportedMachines(t, cluster.Name, "workload-a-misreported", "workload-a-workers")

	w.scaleMachineDeployment(t, md, 2)
	joined := w.checkWorkloadNodes(t, md, wlKube, 2, mgmtBefore)
	checkWorkloadNodeMetrics(t, wlKube, joined[0])
	checkWorkloadSlices(t, wlKube, joined)
	if _, err := wlKube.CoreV1().ServiceAccounts(Namespace).Get(ctx, workload.ServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("winnode's ServiceAccount in the workload cluster: %v", err)
	}
	w.checkMisreportedMachines(t, bad)
	w.checkDuplicateAddressMachine(t, cluster.Name, "workload-a-dup", "workload-a-workers", md)
	w.scaleMachineDeployment(t, md, 3)
	doomed := w.deleteCAPIMachineWhileConfiguring(t, md)
	w.checkWorkloadNodes(t, md, wlKube, 3, mgmtBefore)
	w.checkCAPIMachineGone(t, doomed)

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

// checkWorkloadNodes waits until the MachineDeployment has n Machines,
// each a Ready node of the workload cluster (waitWorkloadNodes), and checks
// that none of them is a Node of the management cluster, whose Node list
// is still mgmtBefore; it returns those Nodes' names, sorted.
func (w *world) checkWorkloadNodes(t *testing.T, md *clusterv1.MachineDeployment, wlKube kubernetes.Interface, n int, mgmtBefore []string) []string {
	t.Helper()
	names := w.waitWorkloadNodes(t, md, wlKube, n)
	for _, name := range names {
		if _, err := w.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Node %s exists in the management cluster: %v", name, err)
		}
	}
	if got := w.nodeNames(t, w.kube); !slices.Equal(got, mgmtBefore) {
		t.Errorf("the management cluster's Nodes changed: %v, were %v", got, mgmtBefore)
	}
	return names
}

// startWorkloadControlPlane starts a second control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) for a workload
// cluster, stopped when the test ends.
func startWorkloadControlPlane(t testing.TB) (*testenv.Env, kubernetes.Interface) {
	t.Helper()
	wl, err := testenv.Start(context.Background(), testenv.Options{})
	if err != nil {
		t.Fatalf("starting the workload cluster's control plane: %v", err)
	}
	t.Cleanup(func() { _ = wl.Stop() })
	wlKube, err := kubernetes.NewForConfig(wl.Config)
	if err != nil {
		t.Fatal(err)
	}
	return wl, wlKube
}

// nodeNames lists the names of a cluster's Nodes, sorted.
func (w *world) nodeNames(t testing.TB, kube kubernetes.Interface) []string {
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
	return w.waitDeploymentNodes(t, md, n, 5*time.Minute, "Machines", func(m *clusterv1.Machine) (string, string) {
		return w.workloadNodeOf(t, m, wlKube)
	})
}

// waitDeploymentNodes waits until the MachineDeployment has exactly n
// Machines and nodeOf names the Node of each ("" and why not), and returns
// those Nodes' names, sorted. what says which Machines (Push or Pull).
func (w *world) waitDeploymentNodes(t testing.TB, md *clusterv1.MachineDeployment, n int, timeout time.Duration, what string, nodeOf func(*clusterv1.Machine) (string, string)) []string {
	t.Helper()
	var names []string
	testkit.Eventually(t, timeout, fmt.Sprintf("MachineDeployment %s: %d %s, each a Ready node of the workload cluster", md.Name, n, what), func() (bool, string) {
		machines := w.capiMachinesOf(t, md)
		if len(machines) != n {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		names = names[:0]
		for i := range machines {
			name, why := nodeOf(&machines[i])
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
	cfg := &bootstrapv1.WinnodeConfig{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err != nil {
		return "", err.Error()
	}
	if want := plan.NodeName(cfg.Status.ComputerName); inst.Spec.NodeName != want || want == "" {
		t.Errorf("instance %s: spec.nodeName %q; want the computer name winnode assigned, %q", inst.Name, inst.Spec.NodeName, want)
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

// A Cluster whose <cluster>-kubeconfig Secret does not exist yet (its
// control plane provider has not written it): the Machine's WinnodeConfig
// says so by name (WorkloadClusterReachable=False,
// KubeconfigSecretNotFound, and a Warning event), no bootstrap data is
// written and no WindowsInstance made; once the control plane provider
// writes the Secret, the Machine becomes a Ready node of the workload
// cluster and of no other.
func TestClusterAPIWorkloadKubeconfigLate(t *testing.T) {
	w := getWorldOf(t, kindCAPI)
	ctx := context.Background()
	wl, wlKube := startWorkloadControlPlane(t)
	mgmtBefore := w.nodeNames(t, w.kube)
	w.startOperator(t, operatorOptions{})
	admin, objs, err := testenv.CAPIWorkloadClusterObjects("workload-late", wl)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := w.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	w.createWinnodeConfigTemplate(t, "workload-late-workers", "wl")
	md := w.createMachineDeployment(t, "workload-late", "workload-late-md-0", "workload-late-workers")
	w.scaleMachineDeployment(t, md, 1)

	var cfgName string
	testkit.Eventually(t, 3*time.Minute, "the Machine's WinnodeConfig: WorkloadClusterReachable=False, KubeconfigSecretNotFound", func() (bool, string) {
		machines := w.capiMachinesOf(t, md)
		if len(machines) != 1 || !machines[0].Spec.Bootstrap.ConfigRef.IsDefined() {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		cfgName = machines[0].Spec.Bootstrap.ConfigRef.Name
		cfg := &bootstrapv1.WinnodeConfig{}
		if err := w.client.Get(ctx, client.ObjectKey{Namespace: md.Namespace, Name: cfgName}, cfg); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionWorkloadClusterReachable)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != workload.ReasonKubeconfigSecretNotFound {
			return false, fmt.Sprintf("conditions %+v", cfg.Status.Conditions)
		}
		if !strings.Contains(c.Message, "workload-late-kubeconfig") {
			t.Errorf("condition message %q does not name the Secret", c.Message)
		}
		return true, ""
	})
	if msgs := w.eventMessages(t, md.Namespace, cfgName, workload.ReasonKubeconfigSecretNotFound); len(msgs) == 0 {
		t.Errorf("no %s event on WinnodeConfig %s", workload.ReasonKubeconfigSecretNotFound, cfgName)
	}
	if err := w.client.Get(ctx, client.ObjectKey{Namespace: md.Namespace, Name: cfgName}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("bootstrap data Secret %s written while the workload cluster cannot be used: %v", cfgName, err)
	}
	var instances winnodev1.WindowsInstanceList
	if err := w.client.List(ctx, &instances); err != nil {
		t.Fatal(err)
	}
	for _, i := range instances.Items {
		if i.Spec.Cluster.Name == "workload-late" {
			t.Errorf("WindowsInstance %s exists while its workload cluster cannot be used", i.Name)
		}
	}

	if err := w.client.Create(ctx, admin); err != nil {
		t.Fatal(err)
	}
	w.waitWorkloadNodes(t, md, wlKube, 1)
	if got := w.nodeNames(t, w.kube); !slices.Equal(got, mgmtBefore) {
		t.Errorf("the management cluster's Nodes changed: %v, were %v", got, mgmtBefore)
	}
}

// An instance naming a Cluster API Cluster that does not exist (a Machine
// of a deleted Cluster, or one written by hand): the operator does nothing
// with its host and makes no credential anywhere: WorkloadClusterReachable
// is False with reason ClusterNotFound and a Warning event, the host sees
// no SSH connection, and no bootstrap token is issued for it in the
// management cluster.
func TestWorkloadInstanceOfMissingCluster(t *testing.T) {
	w := getWorldOf(t, kindCAPI)
	ctx := context.Background()
	w.startOperator(t, operatorOptions{})
	h := w.newHost(t)
	inst := builder.Instance("no-cluster").Host(h.IP(), h.User()).Port(int32(h.Port())).Manual().Build()
	inst.Spec.Cluster = winnodev1.ClusterRef{Namespace: testenv.CAPINamespace, Name: "no-such-cluster"}
	if err := w.client.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.forget(inst.Name) })

	testkit.Eventually(t, 2*time.Minute, "WorkloadClusterReachable=False, ClusterNotFound", func() (bool, string) {
		got := &winnodev1.WindowsInstance{}
		if err := w.client.Get(ctx, client.ObjectKeyFromObject(inst), got); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, winnodev1.ConditionWorkloadClusterReachable)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != workload.ReasonClusterNotFound {
			return false, fmt.Sprintf("conditions %+v", got.Status.Conditions)
		}
		return strings.Contains(c.Message, "no-such-cluster"), "message " + c.Message
	})
	testkit.Eventually(t, time.Minute, "a ClusterNotFound event on the instance", func() (bool, string) {
		n := len(w.eventMessages(t, metav1.NamespaceDefault, inst.Name, workload.ReasonClusterNotFound))
		return n > 0, "none yet"
	})
	if c := h.Counters(); c.Connections != 0 {
		t.Errorf("the host saw %d SSH connections for an instance whose cluster does not exist", c.Connections)
	}
	tokens, err := w.kube.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{LabelSelector: winnodev1.LabelInstance + "=" + inst.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(tokens.Items) != 0 {
		t.Errorf("%d credentials made in the management cluster for an instance of another cluster", len(tokens.Items))
	}
}

// Two namespaces, two Clusters: team-a's workload cluster is a second
// control plane, team-b's is the management cluster itself (self-hosted).
// Each Machine's node is in its own Cluster's cluster and in no other.
// A third Cluster, team-c's in a third namespace, has a kubeconfig Secret
// that reaches team-a's cluster too (two Clusters, one workload cluster):
// winnode's access there, installed for each Cluster, is one set of
// objects (server-side apply of the same objects changes nothing), each
// Cluster's CSR approver approves its own Machines' CSRs and leaves the
// other's pending for it, and both Machines are Ready nodes of that
// cluster, which has those two Nodes and no other.
func TestClusterAPIClustersInTwoNamespaces(t *testing.T) {
	w := getWorldOf(t, kindCAPI)
	ctx := context.Background()
	wl, wlKube := startWorkloadControlPlane(t)
	mgmtBefore := w.nodeNames(t, w.kube)
	w.startOperator(t, operatorOptions{})

	admin, objs, err := testenv.CAPIWorkloadClusterObjects("team-a", wl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.CreateCAPIClusterOf(ctx, testenv.InNamespace("capi-team-a", append([]client.Object{admin}, objs...)...)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.CreateCAPIClusterOf(ctx, testenv.InNamespace("capi-team-b", testenv.CAPIClusterObjects("team-b")...)); err != nil {
		t.Fatal(err)
	}
	adminC, objsC, err := testenv.CAPIWorkloadClusterObjects("team-c", wl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.CreateCAPIClusterOf(ctx, testenv.InNamespace("capi-team-c", append([]client.Object{adminC}, objsC...)...)); err != nil {
		t.Fatal(err)
	}
	var mds []*clusterv1.MachineDeployment
	for _, team := range []string{"team-a", "team-b", "team-c"} {
		ns := "capi-" + team
		w.createWinnodeConfigTemplateIn(t, ns, team+"-workers", "t"+team[len(team)-1:])
		md := w.createMachineDeploymentIn(t, ns, team, team+"-md-0", team+"-workers")
		w.scaleMachineDeployment(t, md, 1)
		mds = append(mds, md)
	}
	inA := w.waitWorkloadNodes(t, mds[0], wlKube, 1)
	inB := w.waitWorkloadNodes(t, mds[1], w.kube, 1)
	inC := w.waitWorkloadNodes(t, mds[2], wlKube, 1)
	if got, want := w.nodeNames(t, wlKube), slices.Sorted(slices.Values(append(slices.Clone(inA), inC...))); !slices.Equal(got, want) {
		t.Errorf("the workload cluster of team-a and team-c has Nodes %v, want %v", got, want)
	}
	if sas, err := wlKube.CoreV1().ServiceAccounts(Namespace).List(ctx, metav1.ListOptions{}); err != nil ||
		!slices.ContainsFunc(sas.Items, func(sa corev1.ServiceAccount) bool { return sa.Name == workload.ServiceAccount }) {
		t.Errorf("winnode's ServiceAccount %s in the shared workload cluster: %v", workload.ServiceAccount, err)
	}
	for _, name := range append(slices.Clone(inA), inC...) {
		if slices.Contains(w.nodeNames(t, w.kube), name) {
			t.Errorf("Node %s of the shared workload cluster is in the management cluster", name)
		}
	}
	for _, name := range inB {
		if slices.Contains(w.nodeNames(t, wlKube), name) {
			t.Errorf("team-b's Node %s is in team-a's workload cluster", name)
		}
	}
	want := slices.Sorted(slices.Values(append(slices.Clone(mgmtBefore), inB...)))
	if got := w.nodeNames(t, w.kube); !slices.Equal(got, want) {
		t.Errorf("the management cluster's Nodes: %v, want %v (those before and team-b's)", got, want)
	}
}
