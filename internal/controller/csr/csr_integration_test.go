package csr

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/fixture"
)

func TestMain(m *testing.M) { controllertest.Main(m) }

// decisions collects the approver's decisions by CSR name.
type decisions struct {
	sync.Mutex
	m map[string]csrapproval.Decision
}

func (d *decisions) record(name string, dec csrapproval.Decision) {
	d.Lock()
	defer d.Unlock()
	d.m[name] = dec
}

func (d *decisions) get(name string) (csrapproval.Decision, bool) {
	d.Lock()
	defer d.Unlock()
	dec, ok := d.m[name]
	return dec, ok
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
	wi := &winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       winnodev1.WindowsInstanceSpec{Address: address, Username: "Administrator", Port: 22, Source: winnodev1.SourceRef{Kind: winnodev1.SourceManual}},
	}
	if err := w.Client.Create(ctx, wi); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ForgetInstance(name) })
	wi.Status = winnodev1.WindowsInstanceStatus{
		Phase: winnodev1.PhaseConfiguring, NodeName: nodeName, BootstrapTokenID: tok.ID,
		Hostname: nodeName, Addresses: []string{address},
	}
	if err := w.Client.Status().Update(ctx, wi); err != nil {
		t.Fatal(err)
	}
	return tok
}

func createCSR(t *testing.T, w *controllertest.World, c kubernetes.Interface, name, signer string, tmpl csrTemplate, usages []certificatesv1.KeyUsage) {
	t.Helper()
	_, err := c.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: makeCSRPEM(t, tmpl), SignerName: signer, Usages: usages},
	}, metav1.CreateOptions{})
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
// kube-controller-manager, the rogue ones stay unapproved.
func TestCSRApproverWithRealClients(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	if err := bootstrap.EnsureRBAC(ctx, w.Kube); err != nil {
		t.Fatal(err)
	}
	dec := &decisions{m: map[string]csrapproval.Decision{}}
	w.StartManager(t, func(mgr ctrl.Manager) error {
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
	if _, err := w.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeOld}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Kube.CoreV1().Nodes().Delete(context.Background(), nodeOld, metav1.DeleteOptions{}) })

	asA := fixture.BootstrapClient(t, w.Kube, *tokA)
	asOld := fixture.BootstrapClient(t, w.Kube, *tokOld)
	asStray := fixture.BootstrapClient(t, w.Kube, *stray)
	nodeCfg, err := w.Env.UserConfig("system:node:"+nodeA, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	asNodeA := kubernetes.NewForConfigOrDie(nodeCfg)
	linuxCfg, err := w.Env.UserConfig("system:node:"+p+"-linux", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	asLinux := kubernetes.NewForConfigOrDie(linuxCfg)

	// The bootstrap token authenticator sees new tokens through an informer.
	controllertest.Eventually(t, 30*time.Second, "the new bootstrap tokens authenticate", func(ctx context.Context) (bool, error) {
		for _, c := range []kubernetes.Interface{asA, asOld, asStray} {
			if _, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return false, err
			}
		}
		return true, nil
	})

	client := certificatesv1.KubeAPIServerClientKubeletSignerName
	serving := certificatesv1.KubeletServingSignerName
	nodes := []string{"system:nodes"}
	rogue := []struct {
		name   string
		c      kubernetes.Interface
		signer string
		tmpl   csrTemplate
		usages []certificatesv1.KeyUsage
	}{
		{"wrong-name", asA, client, csrTemplate{CN: "system:node:" + nodeB, O: nodes}, clientUsages},
		{"extra-sans", asA, client, csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{nodeA}, IPs: []string{"127.0.0.201"}}, clientUsages},
		{"another-requester", asStray, client, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages},
		{"existing-node", asOld, client, csrTemplate{CN: "system:node:" + nodeOld, O: nodes}, clientUsages},
		{"wrong-signer", asA, certificatesv1.KubeAPIServerClientSignerName, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages},
		{"wrong-o", asA, client, csrTemplate{CN: "system:node:" + nodeA, O: []string{"system:masters"}}, clientUsages},
		{"serving-extra-san", asNodeA, serving, csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{nodeA, "kubernetes.default.svc"}}, servingUsages},
		{"serving-unmanaged-node", asLinux, serving, csrTemplate{CN: "system:node:" + p + "-linux", O: nodes, DNS: []string{p + "-linux"}}, servingUsages},
	}
	for _, r := range rogue {
		createCSR(t, w, r.c, p+"-"+r.name, r.signer, r.tmpl, r.usages)
	}
	createCSR(t, w, asA, p+"-good-client", client, csrTemplate{CN: "system:node:" + nodeA, O: nodes}, clientUsages)
	createCSR(t, w, asNodeA, p+"-good-serving", serving, csrTemplate{CN: "system:node:" + nodeA, O: nodes, DNS: []string{nodeA}, IPs: []string{"127.0.0.201"}}, servingUsages)

	// The good ones: approved by the operator, signed by kube-controller-manager.
	for _, name := range []string{p + "-good-client", p + "-good-serving"} {
		var cert []byte
		controllertest.Eventually(t, 60*time.Second, "CSR "+name+" approved and signed", func(ctx context.Context) (bool, error) {
			csr, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cert = csr.Status.Certificate
			return approved(csr) && len(cert) > 0, nil
		})
		block, _ := pem.Decode(cert)
		if block == nil {
			t.Fatalf("CSR %s: the certificate is not PEM", name)
		}
		crt, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if crt.Subject.CommonName != "system:node:"+nodeA {
			t.Errorf("CSR %s: certificate for %q", name, crt.Subject.CommonName)
		}
	}

	// The rogue ones: decided, left alone, and still unapproved once the
	// good ones went all the way through signing.
	for _, r := range rogue {
		name := p + "-" + r.name
		controllertest.Eventually(t, 30*time.Second, "the approver's decision on "+name, func(context.Context) (bool, error) {
			_, ok := dec.get(name)
			return ok, nil
		})
		d, _ := dec.get(name)
		if d.Approve {
			t.Errorf("%s: the approver approved it: %s", r.name, d.Reason)
			continue
		}
		t.Logf("%s left alone: %s", r.name, d.Reason)
		csr, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if approved(csr) || len(csr.Status.Certificate) > 0 {
			t.Errorf("%s: approved or signed (conditions %v)", r.name, csr.Status.Conditions)
		}
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateDenied {
				t.Errorf("%s: denied; the approver must leave CSRs it does not approve alone", r.name)
			}
		}
	}

	// The approval is visible on the instance as an event.
	controllertest.Eventually(t, 30*time.Second, "CSRApproved event on the instance", func(ctx context.Context) (bool, error) {
		evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, p+"-wi-a", EventReasonCSRApproved)
		return len(evs) >= 2, err
	})
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
	controllertest.Eventually(t, 30*time.Second, "the bootstrap token authenticates", func(ctx context.Context) (bool, error) {
		_, err := asHost.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
	createCSR(t, w, asHost, w.Namespace+"-rbac-client", certificatesv1.KubeAPIServerClientKubeletSignerName,
		csrTemplate{CN: "system:node:" + node, O: []string{"system:nodes"}}, clientUsages)
	controllertest.Eventually(t, 60*time.Second, "the CSR approved as the operator", func(ctx context.Context) (bool, error) {
		csr, err := w.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx, w.Namespace+"-rbac-client", metav1.GetOptions{})
		return err == nil && approved(csr), err
	})
}
