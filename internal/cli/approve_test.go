package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// TestApproveOnePerCredential: two client CSRs made with one bootstrap
// token, pending together, get one approval from add's approver, as from
// the operator's.
func TestApproveOnePerCredential(t *testing.T) {
	cl := getCluster(t)
	kube, err := kubernetes.NewForConfig(cl.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := bootstrap.EnsureRBAC(ctx, kube); err != nil {
		t.Fatal(err)
	}
	tok, err := bootstrap.CreateToken(ctx, kube, "approve-twice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bootstrap.RevokeInstanceToken(context.Background(), kube, tok.Instance, tok.ID) })
	h, err := inventory.NewHost("192.0.2.80", "Administrator", "22", "")
	if err != nil {
		t.Fatal(err)
	}
	inst := newHostInstance(h)
	inst.Status.NodeName, inst.Status.BootstrapTokenID = "win-approve-twice", tok.ID
	asHost := fixture.BootstrapClient(t, kube, *tok)

	var names []string
	for range 2 {
		csr := builder.CSR("").GenerateName("approve-twice-").Request(
			fixture.CSRPEM(t, fixture.CSR{CN: "system:node:win-approve-twice", O: []string{"system:nodes"}}),
			certificatesv1.KubeAPIServerClientKubeletSignerName, fixture.ClientUsages...).Build()
		// The token authenticates once the API server's informers see it.
		var created *certificatesv1.CertificateSigningRequest
		testkit.Eventually(t, 30*time.Second, "the host's bootstrap token creating a CSR", func() (bool, string) {
			created, err = asHost.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		names = append(names, created.Name)
		t.Cleanup(func() {
			_ = kube.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		})
	}

	a := &csrApprover{kube: kube, inst: inst, policy: csrapproval.DefaultPolicy(), note: func(string, ...any) {}}
	if err := a.approve(ctx); err != nil {
		t.Fatal(err)
	}
	approved := 0
	for _, name := range names {
		csr, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved {
				approved++
			}
		}
	}
	if approved != 1 {
		t.Errorf("%d of the 2 CSRs made with one token approved, want 1", approved)
	}
}
