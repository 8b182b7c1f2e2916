package csr

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestMain(m *testing.M) { controllertest.Main(m) }

// decisions collects the approver's decisions by CSR name, in order.
type decisions struct {
	sync.Mutex
	m map[string][]csrapproval.Decision
}

func newDecisions() *decisions { return &decisions{m: map[string][]csrapproval.Decision{}} }

func (d *decisions) record(name string, dec csrapproval.Decision) {
	d.Lock()
	defer d.Unlock()
	d.m[name] = append(d.m[name], dec)
}

// get is the last decision on CSR name.
func (d *decisions) get(name string) (csrapproval.Decision, bool) {
	d.Lock()
	defer d.Unlock()
	all := d.m[name]
	if len(all) == 0 {
		return csrapproval.Decision{}, false
	}
	return all[len(all)-1], true
}

// count is how many times CSR name was decided.
func (d *decisions) count(name string) int {
	d.Lock()
	defer d.Unlock()
	return len(d.m[name])
}

// reports is how many times the approver had news about CSR name left
// alone: its first decision to leave it alone, and each change of reason.
func (d *decisions) reports(name string) int {
	d.Lock()
	defer d.Unlock()
	n, last := 0, ""
	for _, dec := range d.m[name] {
		if !dec.Approve && dec.Reason != last {
			n++
		}
		last = dec.Reason
	}
	return n
}

// decisionCounts reads winnode_csr_decisions_total by decision and reason
// from the operator's metrics registry.
func decisionCounts(t *testing.T) map[[2]string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]string]float64{}
	for _, f := range families {
		if f.GetName() != "winnode_csr_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var key [2]string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "decision":
					key[0] = l.GetValue()
				case "reason":
					key[1] = l.GetValue()
				}
			}
			out[key] = m.GetCounter().GetValue()
		}
	}
	if len(out) == 0 {
		t.Fatal("metric winnode_csr_decisions_total is not registered")
	}
	return out
}

// managedInstance creates a WindowsInstance with the status the instance
// reconciler records before the kubelet starts, and a token issued for it.
func managedInstance(t *testing.T, w *controllertest.World, name, nodeName, address string) *bootstrap.Token {
	t.Helper()
	ctx := context.Background()
	tok, err := bootstrap.CreateToken(ctx, w.Kube, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bootstrap.RevokeInstanceToken(context.Background(), w.Kube, tok.Instance, tok.ID) })
	want := builder.Instance(name).Host(address, "Administrator").Port(22).Manual().
		Phase(winnodev1.PhaseConfiguring).Node(nodeName, "").BootstrapToken(tok.ID).Reported(nodeName, "", address).Build()
	wi := want.DeepCopy()
	if err := w.Client.Create(ctx, wi); err != nil { // the status is not created with the object
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ForgetInstance(name) })
	wi.Status = want.Status
	if err := w.Client.Status().Update(ctx, wi); err != nil {
		t.Fatal(err)
	}
	return tok
}

func createCSR(t *testing.T, w *controllertest.World, c kubernetes.Interface, name, signer string, tmpl csrTemplate, usages []certificatesv1.KeyUsage) {
	t.Helper()
	_, err := c.CertificatesV1().CertificateSigningRequests().Create(context.Background(),
		builder.CSR(name).Request(makeCSRPEM(t, tmpl), signer, usages...).Build(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CSR %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = w.Kube.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}

// TestCSRApproverWithRealClients: CSRs created by a real bootstrap-token
// client and a real node client; the approved ones get a certificate from
// kube-controller-manager, the rogue ones stay unapproved, each reported
// once however often it is decided (a Warning event CSRLeftAlone saying
// why, but for a Linux node's), and winnode_csr_decisions_total counts one
// decision per CSR.
func TestCSRApproverWithRealClients(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	if err := bootstrap.EnsureRBAC(ctx, w.Kube); err != nil {
		t.Fatal(err)
	}
	dec := newDecisions()
	before := decisionCounts(t)
	mgr := w.StartManager(t, func(mgr ctrl.Manager) error {
		return (&Approver{Client: mgr.GetClient(), Kube: w.Kube, Recorder: mgr.GetEventRecorder("winnode-csr-approver"), OnDecision: dec.record}).SetupWithManager(mgr)
	})

	p := w.Namespace // unique per run: instance, node and CSR names
	nodeA, nodeB, nodeOld := p+"-a", p+"-b", p+"-old"
	tokA := managedInstance(t, w, p+"-wi-a", nodeA, "127.0.0.201")
	_ = managedInstance(t, w, p+"-wi-b", nodeB, "127.0.0.202")
	tokOld := managedInstance(t, w, p+"-wi-old", nodeOld, "127.0.0.203")
	stray, err := bootstrap.CreateToken(ctx, w.Kube, p+"-not-an-instance", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bootstrap.RevokeInstanceToken(context.Background(), w.Kube, stray.Instance, stray.ID) })
	// A Node that already exists under the name of an instance.
	if _, err := w.Kube.CoreV1().Nodes().Create(ctx, builder.Node(nodeOld).Build(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Kube.CoreV1().Nodes().Delete(context.Background(), nodeOld, metav1.DeleteOptions{}) })

	asA := fixture.BootstrapClient(t, w.Kube, *tokA)
	asOld := fixture.BootstrapClient(t, w.Kube, *tokOld)
	asStray := fixture.BootstrapClient(t, w.Kube, *stray)
	asNodeA, asLinux := nodeClient(t, w, nodeA), nodeClient(t, w, p+"-linux")

	// The bootstrap token authenticator sees new tokens through an informer.
	testkit.Eventually(t, 30*time.Second, "the new bootstrap tokens authenticate", func() (bool, string) {
		for _, c := range []kubernetes.Interface{asA, asOld, asStray} {
			if _, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return false, err.Error()
			}
		}
		return true, "all three authenticate"
	})
	// Each CSR's first decision sees the instances as they are now: one
	// reason per CSR from the start.
	waitCachedStatuses(t, mgr, p+"-wi-a", p+"-wi-b", p+"-wi-old")

	client := certificatesv1.KubeAPIServerClientKubeletSignerName
	serving := certificatesv1.KubeletServingSignerName
	nodes := []string{"system:nodes"}
	rogue := []rogueCSR{
		{"wrong-name", asA, client, csrTemplate{CN: "system:node:" + nodeB, O: nodes}, clientUsages, ReasonRefusedByARule},
		{"extra-sans", asA, client, csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{nodeA}, IPs: []string{"127.0.0.201"}}, clientUsages, ReasonRefusedByARule},
		{"another-requester", asStray, client, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages, ReasonUnknownCredential},
		{"existing-node", asOld, client, csrTemplate{CN: "system:node:" + nodeOld, O: nodes}, clientUsages, ReasonRefusedByARule},
		{"wrong-signer", asA, certificatesv1.KubeAPIServerClientSignerName, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages, ReasonNotKubeletSigner},
		{"wrong-o", asA, client, csrTemplate{CN: "system:node:" + nodeA, O: []string{"system:masters"}}, clientUsages, ReasonRefusedByARule},
		{"serving-extra-san", asNodeA, serving, csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{nodeA, "kubernetes.default.svc"}}, servingUsages, ReasonRefusedByARule},
		// A Linux node's: no winnode host's, no event.
		{"serving-unmanaged-node", asLinux, serving, csrTemplate{CN: "system:node:" + p + "-linux", O: nodes, DNS: []string{p + "-linux"}}, servingUsages, ReasonNotWinnode},
	}
	for _, r := range rogue {
		createCSR(t, w, r.c, p+"-"+r.name, r.signer, r.tmpl, r.usages)
	}
	createCSR(t, w, asA, p+"-good-client", client, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages)
	createCSR(t, w, asNodeA, p+"-good-serving", serving, csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{nodeA}, IPs: []string{"127.0.0.201"}}, servingUsages)

	checkSigned(t, w, "system:node:"+nodeA, p+"-good-client", p+"-good-serving")
	want := map[[2]string]float64{{DecisionApproved, ReasonClient}: 1, {DecisionApproved, ReasonServing}: 1}
	for _, r := range rogue {
		checkLeftAlone(t, w, dec, p+"-"+r.name, r.reason != ReasonNotWinnode)
		want[[2]string{DecisionLeftAlone, r.reason}]++
	}

	checkDecidedAgain(t, w, dec, p, rogue)
	after := decisionCounts(t)
	for key := range after {
		if got := after[key] - before[key]; got != want[key] {
			t.Errorf("winnode_csr_decisions_total{decision=%q,reason=%q} grew by %v, want %v", key[0], key[1], got, want[key])
		}
	}

	// The approval is visible on the instance as an event.
	testkit.Eventually(t, 30*time.Second, "CSRApproved event on the instance", func() (bool, string) {
		evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, p+"-wi-a", EventReasonCSRApproved)
		return err == nil && len(evs) >= 2, fmt.Sprintf("%d events (%v)", len(evs), err)
	})
}

// rogueCSR is a CSR the approver must leave alone: who makes it, what it
// asks for, and the reason label it is counted under.
type rogueCSR struct {
	name   string
	c      kubernetes.Interface
	signer string
	tmpl   csrTemplate
	usages []certificatesv1.KeyUsage
	reason string
}

// checkDecidedAgain has the approver decide every pending CSR again (a
// new WindowsInstance does), the same way, and checks that the rogue ones
// (named prefix-name) are reported no more: one reason each, one event.
func checkDecidedAgain(t *testing.T, w *controllertest.World, dec *decisions, prefix string, rogue []rogueCSR) {
	t.Helper()
	poke := builder.Instance(prefix+"-wi-poke").Host("127.0.0.209", "Administrator").Port(22).Manual().Build()
	if err := w.Client.Create(context.Background(), poke); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ForgetInstance(poke.Name) })
	for _, r := range rogue {
		name := prefix + "-" + r.name
		testkit.Eventually(t, 30*time.Second, "a second decision on "+name, func() (bool, string) {
			n := dec.count(name)
			return n >= 2, fmt.Sprintf("%d decisions", n)
		})
		if n := dec.reports(name); n != 1 {
			t.Errorf("%s: the approver gave %d reasons, want one", r.name, n)
		}
		checkLeftAlone(t, w, dec, name, r.reason != ReasonNotWinnode)
	}
}

// waitCachedStatuses waits until the manager's cache has the status
// managedInstance wrote to each of instances.
func waitCachedStatuses(t *testing.T, mgr ctrl.Manager, instances ...string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "the approver's cache to see the instances' statuses", func() (bool, string) {
		for _, name := range instances {
			var wi winnodev1.WindowsInstance
			if err := mgr.GetClient().Get(context.Background(), crclient.ObjectKey{Name: name}, &wi); err != nil {
				return false, err.Error()
			}
			if wi.Status.BootstrapTokenID == "" {
				return false, "instance " + name + " without its status"
			}
		}
		return true, "all seen"
	})
}

// checkSigned checks that each of the CSRs names is approved by the
// operator and signed by kube-controller-manager, for subject cn.
func checkSigned(t *testing.T, w *controllertest.World, cn string, names ...string) {
	t.Helper()
	for _, name := range names {
		var cert []byte
		testkit.Eventually(t, 60*time.Second, "CSR "+name+" approved and signed", func() (bool, string) {
			csr, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			cert = csr.Status.Certificate
			return approved(csr) && len(cert) > 0, fmt.Sprintf("conditions %v, %d bytes of certificate", csr.Status.Conditions, len(cert))
		})
		block, _ := pem.Decode(cert)
		if block == nil {
			t.Fatalf("CSR %s: the certificate is not PEM", name)
		}
		crt, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if crt.Subject.CommonName != cn {
			t.Errorf("CSR %s: certificate for %q, want %q", name, crt.Subject.CommonName, cn)
		}
	}
}

// checkLeftAlone checks CSR name once the approver decided it: left alone
// (neither approved nor denied), and reported once per reason the approver
// gave — by a Warning event CSRLeftAlone saying why when it concerns
// winnode (a winnode host's, or made with a winnode join credential), by
// no event otherwise. The approver writes the event before it tells
// OnDecision, so every event of a decision seen is there to list.
func checkLeftAlone(t *testing.T, w *controllertest.World, dec *decisions, name string, concernsWinnode bool) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, 30*time.Second, "the approver's decision on "+name, func() (bool, string) {
		n := dec.count(name)
		return n > 0, fmt.Sprintf("%d decisions", n)
	})
	d, _ := dec.get(name)
	if d.Approve {
		t.Errorf("%s: the approver approved it: %s", name, d.Reason)
		return
	}
	t.Logf("%s left alone: %s", name, d.Reason)
	reports := dec.reports(name)
	csr, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if approved(csr) || len(csr.Status.Certificate) > 0 {
		t.Errorf("%s: approved or signed (conditions %v)", name, csr.Status.Conditions)
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied {
			t.Errorf("%s: denied; the approver must leave CSRs it does not approve alone", name)
		}
	}
	evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, name, EventReasonCSRLeftAlone)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	if concernsWinnode {
		want = reports
	}
	if len(evs) != want {
		t.Errorf("%s: %d %s events for %d reasons given, want %d", name, len(evs), EventReasonCSRLeftAlone, reports, want)
	}
	says := false
	for _, e := range evs {
		says = says || strings.Contains(e.Note, d.Reason)
		if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "winnode did not approve CSR "+name) {
			t.Errorf("%s: event %s %q", name, e.Type, e.Note)
		}
	}
	if want > 0 && !says {
		t.Errorf("%s: no event says the reason %q", name, d.Reason)
	}
}

// TestCSRApproverUnderGeneratedRBAC runs the CSR approver as a user that
// holds only config/rbac/role.yaml: the permissions the markers declare are
// enough for it to approve a managed host's CSR.
func TestCSRApproverUnderGeneratedRBAC(t *testing.T) {
	w := controllertest.NewWorld(t)
	cfg := w.OperatorConfig(t)
	asOperator := kubernetes.NewForConfigOrDie(cfg)
	if err := bootstrap.EnsureRBAC(context.Background(), w.Kube); err != nil {
		t.Fatal(err)
	}
	w.StartManagerAs(t, cfg, func(mgr ctrl.Manager) error {
		return (&Approver{Client: mgr.GetClient(), Kube: asOperator, Recorder: mgr.GetEventRecorder("winnode-csr-approver")}).SetupWithManager(mgr)
	})
	node := w.Namespace + "-rbac"
	tok := managedInstance(t, w, w.Namespace+"-wi-rbac", node, "127.0.0.210")
	asHost := fixture.BootstrapClient(t, w.Kube, *tok)
	testkit.Eventually(t, 30*time.Second, "the bootstrap token authenticates", func() (bool, string) {
		_, err := asHost.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{Limit: 1})
		return err == nil, fmt.Sprint(err)
	})
	createCSR(t, w, asHost, w.Namespace+"-rbac-client", certificatesv1.KubeAPIServerClientKubeletSignerName,
		csrTemplate{CN: "system:node:" + node, O: []string{"system:nodes"}}, clientUsages)
	testkit.Eventually(t, 60*time.Second, "the CSR approved as the operator", func() (bool, string) {
		csr, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(context.Background(), w.Namespace+"-rbac-client", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return approved(csr), fmt.Sprintf("conditions %v", csr.Status.Conditions)
	})
}
