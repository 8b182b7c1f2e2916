package csr

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// TestCSRApproverPolicyWithRealClients: through the controller, against the
// real API server, the serving-certificate name rules (docs/approval.md)
// and the approver's limits: a host that reports a Service IP, another
// Node's address or an address outside --node-address-cidrs gets none of
// them; a token whose first client CSR was approved before the operator
// (re)started gets no second one; a Ready winnode node renews its own
// client certificate.
func TestCSRApproverPolicyWithRealClients(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	if err := bootstrap.EnsureRBAC(ctx, w.Kube); err != nil {
		t.Fatal(err)
	}
	p := w.Namespace
	nodeA, nodeR, other := p+"-pa", p+"-pr", p+"-other"
	tokA := managedInstance(t, w, p+"-wi-pa", nodeA, "127.0.0.211")
	_ = managedInstance(t, w, p+"-wi-pr", nodeR, "127.0.0.212")
	// What host A reports beyond spec.address: an allowed address, one
	// outside the allowed CIDRs, a Service IP and another Node's address.
	setStatus(t, w, p+"-wi-pa", func(s *winnodev1.WindowsInstanceStatus) {
		s.Addresses = []string{"127.0.0.211", "10.1.2.3", "192.168.9.9", "10.96.0.10", "10.1.2.250"}
	})
	setStatus(t, w, p+"-wi-pr", func(s *winnodev1.WindowsInstanceStatus) { s.Phase = winnodev1.PhaseReady })
	node := builder.Node(other).Build()
	if _, err := w.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Kube.CoreV1().Nodes().Delete(context.Background(), other, metav1.DeleteOptions{}) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.250"}}
	if _, err := w.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	asA := fixture.BootstrapClient(t, w.Kube, *tokA)
	asNodeA, asNodeR := nodeClient(t, w, nodeA), nodeClient(t, w, nodeR)
	testkit.Eventually(t, 30*time.Second, "the new bootstrap token authenticates", func() (bool, string) {
		_, err := asA.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, fmt.Sprint(err)
	})
	client, serving, nodes := certificatesv1.KubeAPIServerClientKubeletSignerName, certificatesv1.KubeletServingSignerName, []string{"system:nodes"}

	// A first client CSR approved by an earlier run (here: the admin),
	// before this operator starts: it still counts.
	createCSR(t, w, asA, p+"-first-client", client, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages)
	first, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, p+"-first-client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first.Status.Conditions = append(first.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "EarlierRun", Message: "approved before the operator restarted",
	})
	if _, err := w.Kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, first.Name, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	dec := newDecisions()
	policy := csrapproval.DefaultPolicy()
	policy.NodeAddressCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	w.StartManager(t, func(mgr ctrl.Manager) error {
		return (&Approver{Client: mgr.GetClient(), Kube: w.Kube, Recorder: mgr.GetEventRecorder("winnode-csr-approver"), Policy: policy, OnDecision: dec.record}).SetupWithManager(mgr)
	})

	servingA := func(ips ...string) csrTemplate {
		return csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{nodeA}, IPs: ips}
	}
	cases := []struct {
		name    string
		c       kubernetes.Interface
		signer  string
		tmpl    csrTemplate
		usages  []certificatesv1.KeyUsage
		approve bool
	}{
		{"serving-allowed-cidr", asNodeA, serving, servingA("127.0.0.211", "10.1.2.3"), servingUsages, true},
		{"serving-outside-cidrs", asNodeA, serving, servingA("192.168.9.9"), servingUsages, false},
		{"serving-service-ip", asNodeA, serving, servingA("10.96.0.10"), servingUsages, false},
		{"serving-other-node-ip", asNodeA, serving, servingA("10.1.2.250"), servingUsages, false},
		{"serving-service-name", asNodeA, serving, csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{"kubernetes.default.svc.cluster.local"}}, servingUsages, false},
		{"second-client", asA, client, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages, false},
		{"renewal-ready", asNodeR, client, csrTemplate{CN: "system:node:" + nodeR, O: nodes}, clientUsages, true},
		{"renewal-not-ready", asNodeA, client, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages, false},
	}
	for _, c := range cases {
		createCSR(t, w, c.c, p+"-"+c.name, c.signer, c.tmpl, c.usages)
	}
	for _, c := range cases {
		name := p + "-" + c.name
		testkit.Eventually(t, 30*time.Second, "the approver's decision on "+name, func() (bool, string) {
			n := dec.count(name)
			return n > 0, fmt.Sprintf("%d decisions", n)
		})
		d, _ := dec.get(name)
		csr, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Approve != c.approve || approved(csr) != c.approve {
			t.Errorf("%s: decision %v (%s), approved %v; want %v", c.name, d.Approve, d.Reason, approved(csr), c.approve)
		} else {
			t.Logf("%s: %v, %s", c.name, d.Approve, d.Reason)
		}
	}
}

// nodeClient is a client authenticated as Node name (group system:nodes).
func nodeClient(t *testing.T, w *controllertest.World, name string) kubernetes.Interface {
	t.Helper()
	cfg, err := w.Env.UserConfig("system:node:"+name, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// setStatus changes an instance's status as the instance reconciler would.
func setStatus(t *testing.T, w *controllertest.World, name string, change func(*winnodev1.WindowsInstanceStatus)) {
	t.Helper()
	var wi winnodev1.WindowsInstance
	if err := w.Client.Get(context.Background(), crclient.ObjectKey{Name: name}, &wi); err != nil {
		t.Fatal(err)
	}
	change(&wi.Status)
	if err := w.Client.Status().Update(context.Background(), &wi); err != nil {
		t.Fatal(err)
	}
}
