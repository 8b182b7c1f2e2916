package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
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
	"github.com/winnode/winnode/internal/image"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

// Cluster API's own way, on the two-cluster capi world: Pull mode. The
// Machines boot from a simulated image holding what `winnodectl image`
// writes; their simulated cloudbase-init runs the bootstrap data, whose
// `winnode-agent join` makes each host a node of the workload cluster by
// itself, with the bootstrap token the operator issued there. The operator
// never reaches a host:
//   - the Cluster's kubeconfig Secret is missing at first: a Machine's
//     config names the Secret, no data or credential is made anywhere;
//     once the Secret is added, the Machine joins;
//   - 0 → 1 → 2 → 3 → 1 Machines: each a Ready Node of the workload cluster, named
//     after its WinnodeConfig's computer name, with the Machine's
//     providerID and Cluster API's nodeRef (set by Cluster API's own
//     Machine controller); the config says NodeJoined, and its bootstrap
//     token is deleted from the workload cluster; the removed Machines'
//     Nodes are deleted there (by Cluster API);
//   - a Machine deleted mid-join (data and token written, no nodeRef yet)
//     is replaced; it is gone with its config, and its token and any Node
//     its host registered are gone from the workload cluster;
//   - no WindowsInstance exists for a Pull Machine;
//   - a Ready node's windows_exporter, installed by the join from the
//     image, serves its metrics over HTTPS on 9182 with the kubelet's
//     serving certificate, verified against the workload cluster's CA with
//     the node's name as the server name (checkWorkloadNodeMetrics), and
//     the workload cluster's Service windows-exporter has EndpointSlices
//     listing the Ready nodes (checkWorkloadSlices);
//   - each host's SSH server saw no connection and refuses the operator's
//     key (the data authorizes none).
//
// Beside it, on the same control planes (startPullCases):
//   - two namespaces, two Clusters: a self-hosted Cluster's Machine is a
//     Node of the management cluster only, the others' of the workload
//     cluster only; the management cluster's Node list is the one before
//     and the self-hosted Node;
//   - a Machine reporting a joined Machine's address (started once two
//     are joined, checked before the scale-down): event InstanceConflict
//     on it naming the other, its config NodeJoined False with reason
//     InstanceConflict, its host's client CSR left pending in the workload
//     cluster (event CSRLeftAlone on its config), no Node;
//   - an image with a tampered payload file: its host's join refuses it,
//     naming the file in the host's log; the config says NodeJoinTimedOut,
//     pointing at that log; no Node joins.
func TestClusterAPIPullMode(t *testing.T) {
	w := getWorldOf(t, kindCAPI)
	ctx := context.Background()
	wl, wlKube := startWorkloadControlPlane(t)
	mgmtBefore := w.nodeNames(t, w.kube)
	img := w.pullImage(t, "winnode-pull")

	// The image's agent is a development build: an operator of its exact
	// version supports it (joinconfig.SupportedAgents).
	w.startOperator(t, operatorOptions{version: "dev", pullJoinTimeout: pullJoinTimeout})
	// The Cluster's kubeconfig Secret comes late, as a control plane
	// provider writes it once the control plane is up.
	admin, objs, err := testenv.CAPIWorkloadClusterObjects("workload-pull", wl)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.CAPINamespace}}
	if err := w.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := w.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cases := w.startPullCases(t, "workload-pull", img)
	w.createWinnodeConfigTemplateOf(t, testenv.CAPINamespace, "workload-pull-workers", "wp", bootstrapv1.ModePull)
	md := w.createMachineDeploymentFrom(t, testenv.CAPINamespace, "workload-pull", "workload-pull-md-0", "workload-pull-workers", img)
	w.scaleMachineDeployment(t, md, 1)
	w.checkPullLateWaits(t, md, admin, wlKube)

	w.scaleMachineDeployment(t, md, 2)
	nodes := w.waitPullNodes(t, md, wlKube, 2)
	checkWorkloadNodeMetrics(t, wlKube, nodes[0])
	checkWorkloadSlices(t, wlKube, nodes)
	for _, name := range nodes {
		if _, err := w.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Node %s exists in the management cluster: %v", name, err)
		}
	}
	var before []string
	for _, m := range w.capiMachinesOf(t, md) {
		owner := winnodev1.LabelValue(m.Namespace + "." + m.Spec.Bootstrap.ConfigRef.Name)
		tokens, err := wlKube.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{LabelSelector: winnodev1.LabelInstance + "=" + owner})
		if err != nil {
			t.Fatal(err)
		}
		if len(tokens.Items) != 0 {
			t.Errorf("joined Pull Machine %s: %d bootstrap token Secrets still in the workload cluster", m.Name, len(tokens.Items))
		}
		err = w.client.Get(ctx, client.ObjectKey{Name: capisource.InstanceName(m.Namespace, m.Name)}, &winnodev1.WindowsInstance{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("Pull Machine %s has a WindowsInstance: %v", m.Name, err)
		}
		w.checkPullHostRefusesSSH(t, m.Name)
		before = append(before, m.Name)
	}
	owner := w.capiMachinesOf(t, md)[0]
	dup := w.startPullDuplicate(t, "workload-pull", img, &owner)

	// 2 → 3 → 1, as the scale test: a third host joins the same
	// way (the first third is deleted mid-join and replaced); Cluster API
	// drains and deletes the Nodes of the Machines it removes, in the
	// workload cluster.
	w.scaleMachineDeployment(t, md, 3)
	doomed := w.deletePullMachineMidJoin(t, md, before)
	w.waitPullNodes(t, md, wlKube, 3)
	w.checkPullMidJoinGone(t, doomed, wlKube)
	w.checkPullDuplicateRefused(t, dup, owner.Name, wlKube)
	w.checkPushDuplicateOfPull(t, "workload-pull", &owner)
	w.scaleMachineDeployment(t, md, 1)
	left := w.waitPullNodes(t, md, wlKube, 1)

	inSelf := w.waitPullNodes(t, cases.self, w.kube, 1)
	w.checkPullTamperedRefused(t, cases, wlKube)
	testkit.Eventually(t, 3*time.Minute, "the scaled-down Machines' Nodes gone from the workload cluster", func() (bool, string) {
		got := w.nodeNames(t, wlKube)
		return slices.Equal(got, left), fmt.Sprintf("Nodes %v, want %v", got, left)
	})
	wantMgmt := slices.Sorted(slices.Values(append(slices.Clone(mgmtBefore), inSelf...)))
	if got := w.nodeNames(t, w.kube); !slices.Equal(got, wantMgmt) {
		t.Errorf("the management cluster's Nodes: %v, want %v (those before and the self-hosted Cluster's)", got, wantMgmt)
	}
}

// pullImage writes a simulated Windows image of the world's payload, as
// `winnodectl image` writes it, and makes the capi world's cloud boot it
// as name; it returns the name.
func (w *world) pullImage(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "image")
	if _, err := image.Write(w.payloadDir, dir); err != nil {
		t.Fatal(err)
	}
	capiCloud.c.AddImage(name, dir)
	return name
}

// waitPullNodes waits until the MachineDeployment has exactly n Machines,
// none being deleted, each Running with Cluster API's nodeRef to a Ready
// Node of the workload cluster named after its WinnodeConfig's computer
// name, with the Machine's providerID, and its WinnodeConfig NodeJoined
// with no bootstrap token left; it returns the Nodes' names, sorted.
func (w *world) waitPullNodes(t testing.TB, md *clusterv1.MachineDeployment, wlKube kubernetes.Interface, n int) []string {
	t.Helper()
	return w.waitDeploymentNodes(t, md, n, 8*time.Minute, "Pull Machines", func(m *clusterv1.Machine) (string, string) {
		return w.pullNodeOf(t, m, wlKube)
	})
}

// pullNodeOf is the workload cluster's Node of Pull Machine m once it is
// joined ("" and why not).
func (w *world) pullNodeOf(t testing.TB, m *clusterv1.Machine, wlKube kubernetes.Interface) (string, string) {
	t.Helper()
	ctx := context.Background()
	cfg := &bootstrapv1.WinnodeConfig{}
	if err := w.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err != nil {
		return "", err.Error()
	}
	if !m.DeletionTimestamp.IsZero() || m.Status.Phase != string(clusterv1.MachinePhaseRunning) || !m.Status.NodeRef.IsDefined() {
		return "", fmt.Sprintf("phase %q, nodeRef %q; config conditions %+v", m.Status.Phase, m.Status.NodeRef.Name, cfg.Status.Conditions)
	}
	c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined)
	if c == nil || c.Status != metav1.ConditionTrue || cfg.Status.BootstrapToken != nil {
		return "", fmt.Sprintf("config NodeJoined %+v, token %+v", c, cfg.Status.BootstrapToken)
	}
	node, err := wlKube.CoreV1().Nodes().Get(ctx, m.Status.NodeRef.Name, metav1.GetOptions{})
	if err != nil {
		return "", "in the workload cluster: " + err.Error()
	}
	if node.Name != plan.NodeName(cfg.Status.ComputerName) || !strings.HasPrefix(cfg.Status.ComputerName, "wp-") {
		t.Errorf("Machine %s: Node %s, computer name %q", m.Name, node.Name, cfg.Status.ComputerName)
	}
	if node.Spec.ProviderID == "" || node.Spec.ProviderID != m.Spec.ProviderID {
		t.Errorf("Node %s has providerID %q, Machine %s %q", node.Name, node.Spec.ProviderID, m.Name, m.Spec.ProviderID)
	}
	if nodeReadyStatus(node) != corev1.ConditionTrue {
		return "", "Node " + node.Name + " not Ready"
	}
	return node.Name, ""
}

// checkPullHostRefusesSSH checks that Machine name's host saw no SSH
// connection (the operator never reaches a Pull host) and that its SSH
// server refuses the operator's key.
func (w *world) checkPullHostRefusesSSH(t *testing.T, name string) {
	t.Helper()
	h := capiCloud.c.Host(name)
	if h == nil {
		t.Errorf("Machine %s has no simulated host", name)
		return
	}
	if c := h.Counters(); c.Connections != 0 {
		t.Errorf("Machine %s's host saw %d SSH connections; the operator never connects to a Pull host", name, c.Connections)
	}
	conn, err := ssh.Dial("tcp", h.Addr(), &ssh.ClientConfig{
		User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(w.signer)},
		HostKeyCallback: ssh.FixedHostKey(h.HostKey()), Timeout: time.Minute,
	})
	if err == nil {
		_ = conn.Close()
		t.Errorf("the operator's key logged in to Pull Machine %s's host", name)
		return
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("SSH to Pull Machine %s's host: %v; want the operator's key refused", name, err)
	}
}
