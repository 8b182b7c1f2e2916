package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/capisource"
	"github.com/winnode/winnode/internal/image"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/workload"
)

// The Pull cases that run beside TestClusterAPIPullMode's scale test, on
// its control planes and its cloud (no control plane of their own): each
// is a MachineDeployment of one Machine, started first and checked once
// the scale test is done.

// pullJoinTimeout is the operator's join timeout in TestClusterAPIPullMode:
// short, so that the tampered image's Machine says NodeJoinTimedOut within
// the test. A Machine that joins slower may say it for a while; NodeJoined
// is True once it joins.
const pullJoinTimeout = 30 * time.Second

// pullSelfNamespace is the namespace of the self-hosted Pull Cluster.
const pullSelfNamespace = "capi-pull-self"

// pullCases are the MachineDeployments of the cases.
type pullCases struct{ self, tampered *clusterv1.MachineDeployment }

// startPullCases creates the cases' Clusters and MachineDeployments, each
// scaled to one Machine of image img (tampered: a damaged copy of it):
//   - self: a self-hosted Cluster in its own namespace, whose workload
//     cluster is the management cluster;
//   - tampered: in cluster (in testenv.CAPINamespace), from an image whose
//     kubelet.exe is not the one its manifest names.
func (w *world) startPullCases(t *testing.T, cluster, img string) *pullCases {
	t.Helper()
	ctx := context.Background()
	pc := &pullCases{}
	if _, err := w.env.CreateCAPIClusterOf(ctx, testenv.InNamespace(pullSelfNamespace, testenv.CAPIClusterObjects("pull-self")...)); err != nil {
		t.Fatal(err)
	}
	w.createWinnodeConfigTemplateOf(t, pullSelfNamespace, "pull-self-workers", "wp", bootstrapv1.ModePull)
	pc.self = w.createMachineDeploymentFrom(t, pullSelfNamespace, "pull-self", "pull-self-md-0", "pull-self-workers", img)

	w.createWinnodeConfigTemplateOf(t, testenv.CAPINamespace, "workload-pull-tampered", "wp", bootstrapv1.ModePull)
	pc.tampered = w.createMachineDeploymentFrom(t, testenv.CAPINamespace, cluster, "workload-pull-tampered-md-0", "workload-pull-tampered", w.tamperedPullImage(t, img+"-tampered"))
	for _, md := range []*clusterv1.MachineDeployment{pc.self, pc.tampered} {
		w.scaleMachineDeployment(t, md, 1)
	}
	return pc
}

// tamperedPullImage is pullImage whose kubelet.exe is not the payload's.
func (w *world) tamperedPullImage(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "image")
	if _, err := image.Write(w.payloadDir, dir); err != nil {
		t.Fatal(err)
	}
	local, err := image.Local(dir, `C:\k\kubelet.exe`)
	if err != nil {
		t.Fatal(err)
	}
	// A new file, not a write through the copy's inode.
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, []byte("not the kubelet the image was built with"), 0o755); err != nil {
		t.Fatal(err)
	}
	capiCloud.c.AddImage(name, dir)
	return name
}

// configOfOnlyMachine waits for md's one Machine to have a WinnodeConfig
// for which cond holds ("" and why not) and returns both.
func (w *world) configOfOnlyMachine(t *testing.T, md *clusterv1.MachineDeployment, what string, cond func(*bootstrapv1.WinnodeConfig) string) (*clusterv1.Machine, *bootstrapv1.WinnodeConfig) {
	t.Helper()
	var m clusterv1.Machine
	cfg := &bootstrapv1.WinnodeConfig{}
	testkit.Eventually(t, 4*time.Minute, "MachineDeployment "+md.Name+": "+what, func() (bool, string) {
		machines := w.capiMachinesOf(t, md)
		if len(machines) != 1 || !machines[0].Spec.Bootstrap.ConfigRef.IsDefined() {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		m = machines[0]
		if err := w.client.Get(context.Background(), client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err != nil {
			return false, err.Error()
		}
		why := cond(cfg)
		return why == "", why
	})
	return &m, cfg
}

// checkPullLateWaits checks md's one Machine while its Cluster's
// kubeconfig Secret is missing: WorkloadClusterReachable False,
// KubeconfigSecretNotFound, naming the Secret; no bootstrap data, no
// token in its status, and no bootstrap token of its namespace in either
// cluster. Then it creates admin, the Secret the control plane provider
// copies into the kubeconfig Secret.
func (w *world) checkPullLateWaits(t *testing.T, md *clusterv1.MachineDeployment, admin *corev1.Secret, wlKube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	_, cfg := w.configOfOnlyMachine(t, md, "WorkloadClusterReachable=False, KubeconfigSecretNotFound", func(cfg *bootstrapv1.WinnodeConfig) string {
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionWorkloadClusterReachable)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != workload.ReasonKubeconfigSecretNotFound {
			return fmt.Sprintf("conditions %+v", cfg.Status.Conditions)
		}
		return ""
	})
	if c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionWorkloadClusterReachable); !strings.Contains(c.Message, md.Spec.ClusterName+"-kubeconfig") {
		t.Errorf("condition message %q does not name the Secret", c.Message)
	}
	if cfg.Status.BootstrapToken != nil {
		t.Errorf("config %s has a bootstrap token %+v while its workload cluster cannot be used", cfg.Name, cfg.Status.BootstrapToken)
	}
	if err := w.client.Get(ctx, client.ObjectKeyFromObject(cfg), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("bootstrap data Secret %s written while the workload cluster cannot be used: %v", cfg.Name, err)
	}
	for name, kube := range map[string]kubernetes.Interface{"management": w.kube, "workload": wlKube} {
		for _, s := range pullTokensOf(t, kube, md.Namespace) {
			t.Errorf("bootstrap token Secret %s in the %s cluster for a Machine whose workload cluster cannot be used", s, name)
		}
	}
	if err := w.client.Create(ctx, admin); err != nil {
		t.Fatal(err)
	}
}

// pullTokensOf names the bootstrap token Secrets in kube's kube-system of
// the Pull configs of namespace ns.
func pullTokensOf(t *testing.T, kube kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := kube.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: winnodev1.LabelInstance})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		if strings.HasPrefix(s.Labels[winnodev1.LabelInstance], ns+".") {
			names = append(names, s.Name)
		}
	}
	return names
}

// checkPullTamperedRefused checks the tampered image's Machine: its
// host's join refused the image, naming the file in the host's log; the
// Machine has no nodeRef and its config says NodeJoinTimedOut, pointing
// at the host's logs; no Node of its name is in the workload cluster.
func (w *world) checkPullTamperedRefused(t *testing.T, pc *pullCases, wlKube kubernetes.Interface) {
	t.Helper()
	m, cfg := w.configOfOnlyMachine(t, pc.tampered, "NodeJoined=False, NodeJoinTimedOut", func(cfg *bootstrapv1.WinnodeConfig) string {
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != bootstrapv1.ReasonNodeJoinTimedOut {
			return fmt.Sprintf("conditions %+v", cfg.Status.Conditions)
		}
		return ""
	})
	msg := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined).Message
	for _, want := range []string{joinconfig.LogPath, capibootstrap.CloudbaseInitLog} {
		if !strings.Contains(msg, want) {
			t.Errorf("NodeJoinTimedOut's message %q does not name %s", msg, want)
		}
	}
	if m.Status.NodeRef.IsDefined() {
		t.Errorf("Machine %s of the tampered image has nodeRef %s", m.Name, m.Status.NodeRef.Name)
	}
	h := capiCloud.c.Host(m.Name)
	if h == nil {
		t.Fatalf("Machine %s has no simulated host", m.Name)
	}
	testkit.Eventually(t, time.Minute, "the tampered host's join to end", func() (bool, string) {
		_, ended, _ := h.UserDataProgram()
		return ended, "running"
	})
	if _, _, code := h.UserDataProgram(); code == 0 {
		t.Errorf("the join from a tampered image exited 0")
	}
	local, err := h.Path(joinconfig.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(local)
	if err != nil {
		t.Fatalf("the tampered host's join log: %v", err)
	}
	// logfmt: the Windows path's backslashes are escaped.
	for _, want := range []string{`C:\\k\\kubelet.exe`, "payload file kubelet.exe"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the tampered host's join log lacks %q:\n%s", want, log)
		}
	}
	name := plan.NodeName(cfg.Status.ComputerName)
	if _, err := wlKube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s of the tampered image's host: %v; want none", name, err)
	}
}

// midJoin is a Pull Machine deleted after its bootstrap data (and token)
// was written and before it had a nodeRef.
type midJoin struct{ machine, config, tokenID, node string }

// deletePullMachineMidJoin deletes a Machine of md that is not in before,
// once its data and bootstrap token are written and while it has no
// nodeRef.
func (w *world) deletePullMachineMidJoin(t *testing.T, md *clusterv1.MachineDeployment, before []string) midJoin {
	t.Helper()
	ctx := context.Background()
	var doomed midJoin
	var machine clusterv1.Machine
	testkit.Eventually(t, 3*time.Minute, "a new Pull Machine with its data written and no nodeRef", func() (bool, string) {
		for _, m := range w.capiMachinesOf(t, md) {
			if slices.Contains(before, m.Name) || !m.Spec.Bootstrap.ConfigRef.IsDefined() || m.Status.NodeRef.IsDefined() {
				continue
			}
			cfg := &bootstrapv1.WinnodeConfig{}
			if err := w.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err != nil || cfg.Status.BootstrapToken == nil {
				continue
			}
			machine = m
			doomed = midJoin{machine: m.Name, config: cfg.Name, tokenID: cfg.Status.BootstrapToken.ID, node: plan.NodeName(cfg.Status.ComputerName)}
			return true, ""
		}
		return false, "none yet"
	})
	if err := w.client.Delete(ctx, &machine); err != nil {
		t.Fatalf("deleting Machine %s: %v", machine.Name, err)
	}
	return doomed
}

// checkPullMidJoinGone checks that the Machine deleted mid-join is gone
// with its config, and that its bootstrap token and any Node its host
// registered are gone from the workload cluster.
func (w *world) checkPullMidJoinGone(t *testing.T, d midJoin, wlKube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, 2*time.Minute, "Machine "+d.machine+", deleted mid-join, gone with its config, token and Node", func() (bool, string) {
		if err := w.client.Get(ctx, client.ObjectKey{Namespace: testenv.CAPINamespace, Name: d.machine}, &clusterv1.Machine{}); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Machine: %v", err)
		}
		if err := w.client.Get(ctx, client.ObjectKey{Namespace: testenv.CAPINamespace, Name: d.config}, &bootstrapv1.WinnodeConfig{}); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("config: %v", err)
		}
		if _, err := wlKube.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+d.tokenID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("token Secret: %v", err)
		}
		_, err := wlKube.CoreV1().Nodes().Get(ctx, d.node, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Node %s: %v", d.node, err)
	})
}

// startPullDuplicate creates MachineDeployment workload-pull-dup of
// cluster, of one Pull Machine (image img) whose simulated infrastructure
// reports the address of Machine owner, joined, as its own (two Machines
// reporting the same address).
func (w *world) startPullDuplicate(t *testing.T, cluster, img string, owner *clusterv1.Machine) *clusterv1.MachineDeployment {
	t.Helper()
	var addr string
	for _, a := range owner.Status.Addresses {
		if a.Type == clusterv1.MachineInternalIP && addr == "" {
			addr = a.Address
		}
	}
	if addr == "" {
		t.Fatalf("Machine %s reports no InternalIP: %+v", owner.Name, owner.Status.Addresses)
	}
	const name = "workload-pull-dup"
	capiCloud.c.MisreportAddresses(name+"-", addr)
	w.createWinnodeConfigTemplateOf(t, testenv.CAPINamespace, name, "wp", bootstrapv1.ModePull)
	md := w.createMachineDeploymentFrom(t, testenv.CAPINamespace, cluster, name+"-md-0", name, img)
	w.scaleMachineDeployment(t, md, 1)
	return md
}

// checkPullDuplicateRefused checks dup's one Machine, which reports the
// address of Machine owner: a Warning event InstanceConflict on it naming
// owner, its config NodeJoined False with reason InstanceConflict; its
// host's client CSR, once the approver looked at it (event CSRLeftAlone
// on the config, naming owner), left pending in the workload cluster, and
// no Node of its name. Owner stays joined. Then dup is scaled to 0.
func (w *world) checkPullDuplicateRefused(t *testing.T, dup *clusterv1.MachineDeployment, owner string, wlKube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	ownerText := "Machine " + testenv.CAPINamespace + "/" + owner + " (Pull mode), which keeps it"
	m, cfg := w.configOfOnlyMachine(t, dup, "NodeJoined=False, InstanceConflict", func(cfg *bootstrapv1.WinnodeConfig) string {
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != bootstrapv1.ReasonInstanceConflict || !strings.Contains(c.Message, ownerText) {
			return fmt.Sprintf("conditions %+v", cfg.Status.Conditions)
		}
		return ""
	})
	if msgs := w.eventMessages(t, m.Namespace, m.Name, capibootstrap.EventReasonInstanceConflict); !slices.ContainsFunc(msgs, func(s string) bool { return strings.Contains(s, ownerText) }) {
		t.Errorf("Machine %s: InstanceConflict events %q, want one naming %s", m.Name, msgs, owner)
	}
	if cfg.Status.BootstrapToken == nil {
		t.Fatalf("config %s has no bootstrap token", cfg.Name)
	}
	requester := "system:bootstrap:" + cfg.Status.BootstrapToken.ID
	testkit.Eventually(t, 3*time.Minute, "the approver leaving the duplicate's client CSR alone", func() (bool, string) {
		msgs := w.eventMessages(t, cfg.Namespace, cfg.Name, "CSRLeftAlone")
		return slices.ContainsFunc(msgs, func(s string) bool { return strings.Contains(s, requester) && strings.Contains(s, ownerText) }), fmt.Sprint(msgs)
	})
	csrs, err := wlKube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine := 0
	for _, csr := range csrs.Items {
		if csr.Spec.Username == requester {
			mine++
			if len(csr.Status.Conditions) > 0 || len(csr.Status.Certificate) > 0 {
				t.Errorf("CSR %s of the duplicate's host: %+v, want pending", csr.Name, csr.Status.Conditions)
			}
		}
	}
	if mine == 0 {
		t.Errorf("no CSR requested by %s in the workload cluster", requester)
	}
	name := plan.NodeName(cfg.Status.ComputerName)
	if _, err := wlKube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s of the duplicate's host: %v; want none", name, err)
	}
	var o clusterv1.Machine
	if err := w.client.Get(ctx, client.ObjectKey{Namespace: testenv.CAPINamespace, Name: owner}, &o); err != nil || !o.Status.NodeRef.IsDefined() {
		t.Errorf("Machine %s, whose address the duplicate reports: %v, nodeRef %q", owner, err, o.Status.NodeRef.Name)
	}
	w.scaleMachineDeployment(t, dup, 0)
}

// checkPushDuplicateOfPull creates MachineDeployment workload-push-dup of
// cluster, of one Push Machine whose simulated infrastructure reports the
// address of Pull Machine owner, joined (a Push Machine and a Pull Machine
// reporting the same address): it gets no WindowsInstance but a Warning
// event InstanceConflict naming owner, and its host (the one winnode would
// reach at that address) sees no SSH connection. Then it is scaled to 0.
func (w *world) checkPushDuplicateOfPull(t *testing.T, cluster string, owner *clusterv1.Machine) {
	t.Helper()
	var addr string
	for _, a := range owner.Status.Addresses {
		if a.Type == clusterv1.MachineInternalIP && addr == "" {
			addr = a.Address
		}
	}
	const name = "workload-push-dup"
	capiCloud.c.MisreportAddresses(name+"-", addr)
	w.createWinnodeConfigTemplateOf(t, testenv.CAPINamespace, name, "wq", bootstrapv1.ModePush)
	md := w.createMachineDeploymentFrom(t, testenv.CAPINamespace, cluster, name+"-md-0", name, "")
	w.scaleMachineDeployment(t, md, 1)
	var machine clusterv1.Machine
	testkit.Eventually(t, 3*time.Minute, "event InstanceConflict on the Push Machine reporting a Pull Machine's address", func() (bool, string) {
		machines := w.capiMachinesOf(t, md)
		if len(machines) != 1 {
			return false, fmt.Sprintf("%d Machines", len(machines))
		}
		machine = machines[0]
		msgs := w.eventMessages(t, machine.Namespace, machine.Name, "InstanceConflict")
		return slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, owner.Name) }), fmt.Sprint(msgs)
	})
	err := w.client.Get(context.Background(), client.ObjectKey{Name: capisource.InstanceName(machine.Namespace, machine.Name)}, &winnodev1.WindowsInstance{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Push Machine %s, reporting the address of Pull Machine %s, has a WindowsInstance: %v", machine.Name, owner.Name, err)
	}
	checkHostUntouched(t, capiCloud, machine.Name)
	w.scaleMachineDeployment(t, md, 0)
}
