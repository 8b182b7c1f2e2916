package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// getToken reads the token with the given ID back as an administrator,
// nil (and no error) when its Secret does not exist. The operator cannot:
// it has no read access to kube-system's Secrets.
func getToken(ctx context.Context, c kubernetes.Interface, tokenID string) (*Token, error) {
	s, err := c.CoreV1().Secrets(TokenNamespace).Get(ctx, bootstraputil.BootstrapTokenSecretName(tokenID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return tokenFromSecret(s), nil
}

func adminClient(t *testing.T) (*testenv.Env, kubernetes.Interface) {
	t.Helper()
	env := testenv.Get(t)
	c, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}

// tokenClient builds a client the way the host's kubelet does: from the
// bootstrap kubeconfig rendered from cluster-info and the token. Other
// packages' tests use fixture.BootstrapClient, which does the same; this
// package's tests cannot import fixture, which imports this package.
func tokenClient(t *testing.T, ctx context.Context, admin kubernetes.Interface, tok *Token) kubernetes.Interface {
	t.Helper()
	ci, err := LoadClusterInfo(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := BootstrapKubeconfig(*ci, *tok)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfigClient(t, kc)
}

// kubeconfigClient is a client from a kubeconfig winnode renders for a host.
func kubeconfigClient(t *testing.T, kubeconfig []byte) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nodeClientCSR is a kubelet client certificate request for nodeName.
func nodeClientCSR(t *testing.T, nodeName string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// approverReview waits for kube-controller-manager's CSR approver to
// decide on the first node client CSR user made since: it decides when it
// sees a CSR, by asking the API server whether the requester may create
// certificatesigningrequests/nodeclient, and approves only on yes. Its
// question and answer are what a test checks before saying that it did
// not approve.
func approverReview(t *testing.T, env *testenv.Env, since time.Time, user string) testenv.ApproverReview {
	t.Helper()
	var asked testenv.ApproverReview
	testkit.Eventually(t, 30*time.Second, "kube-controller-manager's CSR approver asking about "+user, func() (bool, string) {
		reviews, err := env.ApproverReviews(since)
		if err != nil {
			return false, err.Error()
		}
		for _, r := range reviews {
			if r.User == user && r.Subresource == "nodeclient" {
				asked = r
				return true, ""
			}
		}
		return false, fmt.Sprintf("only reviews of others: %+v", reviews)
	})
	return asked
}

func createCSR(ctx context.Context, c kubernetes.Interface, name string, req []byte) error {
	csr := builder.CSR(name).Request(req, certificatesv1.KubeAPIServerClientKubeletSignerName,
		certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth).Build()
	_, err := c.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	return err
}

func TestTokenAuthenticatesAndCanRequestANodeCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, admin := adminClient(t)

	if err := EnsureRBAC(ctx, admin); err != nil {
		t.Fatal(err)
	}
	tok, err := CreateToken(ctx, admin, "wi-token-auth", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RevokeInstanceToken(context.Background(), admin, tok.Instance, tok.ID) })
	if until := time.Until(tok.Expiration); until <= 0 || until > DefaultTokenTTL {
		t.Errorf("token expires in %v, want within (0, %v]", until, DefaultTokenTTL)
	}

	c := tokenClient(t, ctx, admin, tok)
	// The bootstrap token authenticator reads Secrets through an informer:
	// allow it a moment to see the new one.
	var review *authenticationv1.SelfSubjectReview
	testkit.Eventually(t, 30*time.Second, "the new bootstrap token to authenticate", func() (bool, string) {
		review, err = c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	ui := review.Status.UserInfo
	if ui.Username != Username(tok.ID) {
		t.Errorf("token authenticates as %q, want %q", ui.Username, Username(tok.ID))
	}
	if !slices.Contains(ui.Groups, Group) || !slices.Contains(ui.Groups, "system:bootstrappers") {
		t.Errorf("token groups %v lack %s or system:bootstrappers", ui.Groups, Group)
	}

	// The RBAC authorizer, too, works from informers: the binding EnsureRBAC
	// just made may not be seen yet, so Forbidden is retried for a while.
	t.Cleanup(func() {
		_ = admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), "wi-token-auth-csr", metav1.DeleteOptions{})
	})
	req := nodeClientCSR(t, "wi-token-auth")
	since := time.Now().Add(-time.Second)
	var createErr error
	testkit.Eventually(t, 30*time.Second, "the bootstrap token creating a node client CSR (the authorizer may need a moment)", func() (bool, string) {
		createErr = createCSR(ctx, c, "wi-token-auth-csr", req)
		if apierrors.IsAlreadyExists(createErr) { // an earlier attempt did create it
			createErr = nil
		}
		return !apierrors.IsForbidden(createErr), fmt.Sprint(createErr)
	})
	if createErr != nil {
		t.Fatalf("the bootstrap token cannot create a node client CSR: %v", createErr)
	}

	// Without the nodeclient permission kube-controller-manager's
	// csrapproving controller must leave the CSR to the operator.
	if asked := approverReview(t, env, since, Username(tok.ID)); asked.Allowed {
		t.Errorf("kube-controller-manager's CSR approver was told %s (groups %v) may have node client certificates: the RBAC grants too much", asked.User, asked.Groups)
	}
	csr, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, "wi-token-auth-csr", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range csr.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved {
			t.Fatalf("kube-controller-manager approved a winnode bootstrap CSR on its own (%s): the RBAC grants too much", cond.Reason)
		}
	}
}

func TestRevokedTokenIsRejected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, admin := adminClient(t)
	if err := EnsureRBAC(ctx, admin); err != nil {
		t.Fatal(err)
	}
	tok, err := CreateToken(ctx, admin, "wi-revoke", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := tokenClient(t, ctx, admin, tok)
	whoami := func(ctx context.Context) error {
		_, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	}
	testkit.Eventually(t, 30*time.Second, "the token to authenticate", func() (bool, string) {
		err := whoami(ctx)
		return err == nil, fmt.Sprint(err)
	})

	got, err := getToken(ctx, admin, tok.ID)
	if err != nil || got == nil || got.Instance != "wi-revoke" || got.Secret != tok.Secret {
		t.Fatalf("getToken = %+v, %v", got, err)
	}

	if err := RevokeInstanceToken(ctx, admin, "wi-revoke", tok.ID); err != nil {
		t.Fatal(err)
	}
	if err := RevokeInstanceToken(ctx, admin, "wi-revoke", tok.ID); err != nil {
		t.Errorf("revoking an already revoked token: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, "the revoked token to be refused", func() (bool, string) {
		err := whoami(ctx)
		return apierrors.IsUnauthorized(err), fmt.Sprint(err)
	})
	if got, err := getToken(ctx, admin, tok.ID); err != nil || got != nil {
		t.Errorf("getToken after revoke = %v, %v; want nil", got, err)
	}
}

func TestExpiredTokenIsCleanedUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, admin := adminClient(t)
	tok, err := CreateToken(ctx, admin, "wi-expire", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RevokeInstanceToken(context.Background(), admin, tok.Instance, tok.ID) })
	// kube-controller-manager's token cleaner deletes expired token Secrets.
	testkit.Eventually(t, 2*time.Minute, fmt.Sprintf("the token cleaner deleting expired %s", tok), func() (bool, string) {
		got, err := getToken(ctx, admin, tok.ID)
		return err == nil && got == nil, fmt.Sprintf("%v, %v", got, err)
	})
}

func TestEnsureRBACIsIdempotentAndRepairs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, admin := adminClient(t)
	for range 2 {
		if err := EnsureRBAC(ctx, admin); err != nil {
			t.Fatal(err)
		}
	}
	crb, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, NodeBootstrapperBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Someone edits the subjects: EnsureRBAC puts them back.
	crb.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "someone-else"}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := EnsureRBAC(ctx, admin); err != nil {
		t.Fatal(err)
	}
	crb, err = admin.RbacV1().ClusterRoleBindings().Get(ctx, NodeBootstrapperBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != Group || crb.RoleRef.Name != "system:node-bootstrapper" {
		t.Errorf("binding not repaired: subjects %v roleRef %v", crb.Subjects, crb.RoleRef)
	}
}

func TestLoadClusterInfoFromTestenv(t *testing.T) {
	env, admin := adminClient(t)
	ci, err := LoadClusterInfo(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Server != env.Host {
		t.Errorf("cluster-info server %q, want %q", ci.Server, env.Host)
	}
	if _, err := certutil.ParseCertsPEM(ci.CAData); err != nil {
		t.Error(err)
	}
}
