package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"fmt"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/winnode/winnode/internal/bootstrap"
	csrcontroller "github.com/winnode/winnode/internal/controller/csr"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// Rogue CSRs are left alone while a real host's are approved: a client
// certificate for a name no instance expects, one for a real host's name
// requested by a join credential other than the one issued for it (a
// bootstrap token, or a join ServiceAccount where bootstrap tokens do not
// authenticate), one with SANs, one for the wrong signer. Each gets the
// operator's Warning event CSRLeftAlone saying why, which proves the
// approver decided it; it is still pending after that and after the real
// host's CSRs were approved. (Requests by a cluster administrator are
// not used: kube-controller-manager approves those itself, as it should.
// internal/controller/csr's own tests cover each rule in detail.)
func TestRogueCSRsAreNotApproved(t *testing.T) { eachAPIServer(t, testRogueCSRsAreNotApproved) }

func testRogueCSRsAreNotApproved(t *testing.T, w *world) {
	h := w.newHost(t)
	node := plan.NodeName(h.Hostname()) // the name the real host will register
	ctx := context.Background()

	asToken := w.strayJoinCredential(t, ctx)

	client := certificatesv1.KubeAPIServerClientKubeletSignerName
	rogue := []struct {
		name, cn, signer string
		dns              []string
		as               kubernetes.Interface
	}{
		{"rogue-unknown-name", "system:node:win-nobody", client, nil, asToken},
		{"rogue-stolen-name", "system:node:" + node, client, nil, asToken},
		{"rogue-sans", "system:node:" + node, client, []string{"evil.example.com"}, asToken},
		{"rogue-signer", "system:node:" + node, certificatesv1.KubeAPIServerClientSignerName, nil, asToken},
	}
	uids := map[string]types.UID{}
	for _, r := range rogue {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		req, err := certutil.MakeCSR(key, &pkix.Name{CommonName: r.cn, Organization: []string{"system:nodes"}}, r.dns, nil)
		if err != nil {
			t.Fatal(err)
		}
		csr := builder.CSR(r.name).Request(req, r.signer, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth).Build()
		created, err := r.as.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating CSR %s: %v", r.name, err)
		}
		uids[r.name] = created.UID
		t.Cleanup(func() {
			_ = w.kube.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), r.name, metav1.DeleteOptions{})
		})
	}

	w.startOperator(t, operatorOptions{})
	for _, r := range rogue {
		t.Logf("%s: %s", r.name, w.waitLeftAlone(t, r.name, uids[r.name]))
		w.checkNotApproved(t, r.name, r.cn, r.signer)
	}
	// The real host's CSRs get approved; the rogue ones stay as they were.
	w.instanceFor(t, "csr-control", h)
	w.waitReady(t, "csr-control", 3*time.Minute)
	for _, r := range rogue {
		w.checkNotApproved(t, r.name, r.cn, r.signer)
	}
}

// waitLeftAlone waits for the operator's Warning event CSRLeftAlone on CSR
// name (this run's: uid), written once the approver decided not to approve
// it, and returns what it says.
func (w *world) waitLeftAlone(t *testing.T, name string, uid types.UID) string {
	t.Helper()
	var note string
	testkit.Eventually(t, time.Minute, "the operator's reason for leaving CSR "+name+" alone", func() (bool, string) {
		for _, e := range w.events(t, metav1.NamespaceDefault, name) {
			if e.Reason == csrcontroller.EventReasonCSRLeftAlone && e.InvolvedObject.UID == uid {
				if e.Type != corev1.EventTypeWarning {
					t.Errorf("CSR %s: event %s is of type %s, want Warning", name, e.Reason, e.Type)
				}
				note = e.Message
				return true, note
			}
		}
		return false, "no " + csrcontroller.EventReasonCSRLeftAlone + " event yet"
	})
	return note
}

// checkNotApproved checks that rogue CSR name (CN cn, for signer) is
// pending: neither approved nor denied (winnode leaves what it does not
// approve to other approvers).
func (w *world) checkNotApproved(t *testing.T, name, cn, signer string) {
	t.Helper()
	csr, err := w.kube.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			t.Errorf("rogue CSR %s (CN %s, signer %s, by %s) was %s: %s", name, cn, signer, csr.Spec.Username, c.Type, c.Message)
		}
	}
}

// strayJoinCredential is a client authenticated with a join credential of
// the world's kind that no WindowsInstance was issued: a bootstrap token, or
// a labelled join ServiceAccount in the operator's namespace. Both may
// create CSRs (system:node-bootstrapper).
func (w *world) strayJoinCredential(t *testing.T, ctx context.Context) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(w.env.AnonymousConfig())
	if w.serviceAccountJoin() {
		tok, err := bootstrap.CreateServiceAccountToken(ctx, w.kube, Namespace, "no-such-instance", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = bootstrap.RevokeServiceAccount(context.Background(), w.kube, Namespace, "no-such-instance")
		})
		cfg.BearerToken = tok.Value
	} else {
		tok, err := bootstrap.CreateToken(ctx, w.kube, "no-such-instance", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bootstrap.RevokeInstanceToken(context.Background(), w.kube, tok.Instance, tok.ID) })
		if err := bootstrap.EnsureRBAC(ctx, w.kube); err != nil {
			t.Fatal(err)
		}
		cfg.BearerToken = tok.Value()
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The API server sees a new token and a new binding (RBAC authorizer)
	// through informers: wait until the credential may list CSRs, which the
	// role that lets it create them also grants.
	testkit.Eventually(t, time.Minute, "the stray join credential to authenticate and be authorized", func() (bool, string) {
		_, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, fmt.Sprint(err)
	})
	return c
}
