package configure

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

// The kubelet-port check of a Ready host reads the kubelet's serving CSRs
// from the cache it is given (the one the CSR approver's watch fills), and
// makes no request of its own about CSRs to the API server; without a
// cache (winnodectl) it lists them there, once per check.
func TestServingCertificateReadsTheCache(t *testing.T) {
	env := testenv.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The Configurer's own client counts its requests about CSRs.
	var csrRequests atomic.Int32
	counted := rest.CopyConfig(env.Config)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if strings.Contains(r.URL.Path, "certificatesigningrequests") {
				csrRequests.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	csrCache, err := cache.New(env.Config, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = csrCache.Start(ctx) }()
	conf := &Configurer{Kube: kubernetes.NewForConfigOrDie(counted), CSRs: csrCache, Log: logr.Discard()}

	// The kubelet of node win-cache asks for its serving certificate, with
	// its own credentials (impersonated: spec.username is the requester).
	const node = "win-cache"
	asNode := rest.CopyConfig(env.Config)
	asNode.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + node, Groups: []string{"system:nodes", "system:masters"}}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-kubelet-serving-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    fixture.CSRPEM(t, fixture.CSR{CN: "system:node:" + node, O: []string{"system:nodes"}, IPs: []string{"192.0.2.10"}}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     fixture.ServingUsages,
		},
	}
	admin := kubernetes.NewForConfigOrDie(env.Config)
	csr, err = kubernetes.NewForConfigOrDie(asNode).CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), csr.Name, metav1.DeleteOptions{})
	})

	check := func(what string, wantIssued, wantPending bool) {
		t.Helper()
		testkit.Eventually(t, time.Minute, what, func() (bool, string) {
			issued, pending := conf.servingCertificate(ctx, node)
			return issued == wantIssued && pending == wantPending, fmt.Sprintf("issued %v, pending %v", issued, pending)
		})
	}
	check("the new serving CSR pending, read from the cache", false, true)
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "Test", Message: "denied by the test",
	})
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("the denied CSR no longer pending, read from the cache", false, false)
	if n := csrRequests.Load(); n != 0 {
		t.Errorf("the checks with a cache made %d requests about CSRs to the API server, want none", n)
	}

	// Without a cache, each check lists them from the API server.
	conf.CSRs = nil
	if issued, pending := conf.servingCertificate(ctx, node); issued || pending {
		t.Errorf("listed from the API server: issued %v, pending %v; want neither (denied)", issued, pending)
	}
	if n := csrRequests.Load(); n != 1 {
		t.Errorf("a check without a cache made %d requests about CSRs, want 1 list", n)
	}
}

// roundTripper is an http.RoundTripper of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
