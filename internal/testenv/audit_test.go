package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"fmt"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"

	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// The audit log names each write of an identity in system:masters, and
// none of its reads.
func TestWritesAreAudited(t *testing.T) {
	env := Get(t)
	cfg, err := env.UserConfig("audit-test-writer", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited", Namespace: metav1.NamespaceDefault}}
	if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
	for range 3 {
		if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, "application/merge-patch+json", []byte(`{"data":{"a":"b"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	writes, err := env.Writes("audit-test-writer", since)
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 || writes[0].Verb != "create" || writes[1].Verb != "patch" || writes[1].Resource != "configmaps" || writes[1].Name != "audited" {
		t.Fatalf("audited writes %v, want a create and a patch of configmap audited", writes)
	}
}

// The CSR approver's access reviews are logged with their answers: yes
// for a requester granted node client certificates (whose CSR it then
// approves), no for one that is not.
func TestApproverReviewsAreAudited(t *testing.T) {
	env := Get(t)
	c := admin(t, env)
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	for user, role := range map[string]string{
		"approver-test-granted": "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
		"approver-test-refused": "",
	} {
		roles := []string{"system:node-bootstrapper"} // may create CSRs
		if role != "" {
			roles = append(roles, role)
		}
		for _, r := range roles {
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + strings.ReplaceAll(r, ":", "-")},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
			if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
			})
		}
		cfg, err := env.UserConfig(user)
		if err != nil {
			t.Fatal(err)
		}
		uc := kubernetes.NewForConfigOrDie(cfg)
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		req, err := cert.MakeCSR(key, &pkix.Name{CommonName: "system:node:" + user, Organization: []string{"system:nodes"}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		csr := builder.CSR(user).Request(req, certificatesv1.KubeAPIServerClientKubeletSignerName,
			certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth).Build()
		testkit.Eventually(t, 30*time.Second, user+" creating a CSR (the authorizer may need a moment)", func() (bool, string) {
			_, err := uc.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
		})
		t.Cleanup(func() {
			_ = c.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), csr.Name, metav1.DeleteOptions{})
		})
	}
	answers := map[string]bool{}
	testkit.Eventually(t, 30*time.Second, "the CSR approver's reviews of both requesters", func() (bool, string) {
		reviews, err := env.ApproverReviews(since)
		if err != nil {
			return false, err.Error()
		}
		for _, r := range reviews {
			if strings.HasPrefix(r.User, "approver-test-") && r.Subresource == "nodeclient" {
				answers[r.User] = r.Allowed
			}
		}
		return len(answers) == 2, fmt.Sprintf("%+v", reviews)
	})
	if !answers["approver-test-granted"] || answers["approver-test-refused"] {
		t.Errorf("answers %v, want yes for approver-test-granted only", answers)
	}
	testkit.Eventually(t, 30*time.Second, "the granted requester's CSR approved", func() (bool, string) {
		got, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, "approver-test-granted", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(got.Status.Conditions) > 0 && got.Status.Conditions[0].Type == certificatesv1.CertificateApproved, fmt.Sprintf("%+v", got.Status.Conditions)
	})
	// Only the approver's reviews: none is counted as a write.
	writes, err := env.Writes("", since)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if w.User == csrApproverUser {
			t.Errorf("the approver's review counted as a write: %v", w)
		}
	}
}
