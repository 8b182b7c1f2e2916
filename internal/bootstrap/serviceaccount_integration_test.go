package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

// noBootstrapAuth is a control plane whose API server runs without
// --enable-bootstrap-token-auth, as OpenShift's does.
func noBootstrapAuth(t *testing.T) (*testenv.Env, kubernetes.Interface) {
	t.Helper()
	env := testenv.GetWith(t, testenv.Options{NoBootstrapTokenAuth: true})
	c, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}

func ensureNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestDetectorTellsTheKindsOfAPIServerApart: auto picks bootstrap tokens
// where they authenticate and ServiceAccounts where they do not, and leaves
// no probe token behind.
func TestDetectorTellsTheKindsOfAPIServerApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, withAuth := adminClient(t)
	_, withoutAuth := noBootstrapAuth(t)
	for _, tc := range []struct {
		name string
		kube kubernetes.Interface
		want Mode
	}{
		{"bootstrap-token auth", withAuth, ModeBootstrapToken},
		{"no bootstrap-token auth", withoutAuth, ModeServiceAccount},
	} {
		d := &Detector{Kube: tc.kube}
		got, why, err := d.Resolve(ctx, ModeAuto)
		if err != nil || got != tc.want {
			t.Errorf("%s: Resolve(auto) = %s (%s), %v; want %s", tc.name, got, why, err, tc.want)
		}
		if toks, err := instanceTokens(ctx, tc.kube, probeInstance); err != nil || len(toks) != 0 {
			t.Errorf("%s: the probe left %d tokens (%v)", tc.name, len(toks), err)
		}
		if got, _, _ := d.Resolve(ctx, ModeBootstrapToken); got != ModeBootstrapToken {
			t.Errorf("%s: an explicit mode was overridden: %s", tc.name, got)
		}
	}
}

// TestServiceAccountTokenJoinsAndIsRevoked: on an API server without
// bootstrap-token authentication, the join ServiceAccount's token
// authenticates as system:serviceaccount:<ns>:winnode-join-<instance>, may
// create a node client CSR (system:node-bootstrapper), lives at most an
// hour, and stops authenticating once RevokeServiceAccount ran; objects of
// the same name that winnode did not make are left alone.
func TestServiceAccountTokenJoinsAndIsRevoked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, admin := noBootstrapAuth(t)
	const ns, inst = "winnode-system", "wi-sa-join"
	ensureNamespace(t, admin, ns)

	tok, err := CreateServiceAccountToken(ctx, admin, ns, inst, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RevokeServiceAccount(context.Background(), admin, ns, inst) })
	if until := time.Until(tok.Expiration); until <= 0 || until > ServiceAccountTokenTTL {
		t.Errorf("token expires in %v, want within (0, %v]", until, ServiceAccountTokenTTL)
	}
	if tok.String() == "" || slices.Contains([]string{tok.String()}, tok.Value) {
		t.Errorf("String %q shows the token", tok.String())
	}
	// Asking again reuses the ServiceAccount and binding.
	if _, err := CreateServiceAccountToken(ctx, admin, ns, inst, 0); err != nil {
		t.Fatalf("second token: %v", err)
	}

	ci, err := LoadClusterInfo(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := ServiceAccountKubeconfig(*ci, *tok)
	if err != nil {
		t.Fatal(err)
	}
	c := kubeconfigClient(t, kc)
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the join ServiceAccount token does not authenticate: %v", err)
	}
	// The user of a ServiceAccount's tokens (Kubernetes' "Managing Service
	// Accounts": system:serviceaccount:<namespace>:<name>).
	if want := "system:serviceaccount:" + ns + ":" + ServiceAccountName(inst); review.Status.UserInfo.Username != want {
		t.Errorf("authenticates as %q, want %q", review.Status.UserInfo.Username, want)
	}
	if name, ok := ServiceAccountFromUsername(ns, review.Status.UserInfo.Username); !ok || name != ServiceAccountName(inst) {
		t.Errorf("ServiceAccountFromUsername = %q, %v", name, ok)
	}
	if !slices.Contains(review.Status.UserInfo.Groups, ServiceAccountGroup(ns)) {
		t.Errorf("groups %v lack %s", review.Status.UserInfo.Groups, ServiceAccountGroup(ns))
	}

	csrName := inst + "-csr"
	t.Cleanup(func() {
		_ = admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), csrName, metav1.DeleteOptions{})
	})
	req := nodeClientCSR(t, inst)
	since := time.Now().Add(-time.Second)
	var createErr error
	testkit.Eventually(t, 30*time.Second, "the join ServiceAccount creating a node client CSR (the authorizer may need a moment)", func() (bool, string) {
		createErr = createCSR(ctx, c, csrName, req)
		if apierrors.IsAlreadyExists(createErr) {
			createErr = nil
		}
		return !apierrors.IsForbidden(createErr), fmt.Sprint(createErr)
	})
	if createErr != nil {
		t.Fatalf("the join ServiceAccount cannot create a node client CSR: %v", createErr)
	}
	// kube-controller-manager's CSR approver must leave it to the operator.
	if asked := approverReview(t, env, since, review.Status.UserInfo.Username); asked.Allowed {
		t.Errorf("kube-controller-manager's CSR approver was told %s (groups %v) may have node client certificates", asked.User, asked.Groups)
	}
	csr, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, csrName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if csr.Spec.Username != review.Status.UserInfo.Username {
		t.Errorf("CSR requester %q, want %q", csr.Spec.Username, review.Status.UserInfo.Username)
	}
	for _, cond := range csr.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved {
			t.Fatalf("kube-controller-manager approved a join ServiceAccount's CSR on its own (%s)", cond.Reason)
		}
	}

	if err := RevokeServiceAccount(ctx, admin, ns, inst); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the token refused once its ServiceAccount is deleted", func() (bool, string) {
		_, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return apierrors.IsUnauthorized(err), fmt.Sprint(err)
	})
	if subjects := joinSubjects(t, admin); slices.Contains(subjects, joinSubject(ns, ServiceAccountName(inst))) {
		t.Errorf("the revoked ServiceAccount is still bound: %v", subjects)
	}

	// Not winnode's (no instance label): revocation leaves it alone.
	foreignSA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName(inst), Namespace: ns}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, foreignSA, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().ServiceAccounts(ns).Delete(context.Background(), foreignSA.Name, metav1.DeleteOptions{})
	})
	if err := RevokeServiceAccount(ctx, admin, ns, inst); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, foreignSA.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("RevokeServiceAccount deleted a ServiceAccount winnode did not make: %v", err)
	}
	if _, err := CreateServiceAccountToken(ctx, admin, ns, inst, 0); err == nil {
		t.Errorf("a token was issued for a ServiceAccount winnode did not make")
	}
}

// joinSubjects are the subjects of the join ServiceAccounts' binding.
func joinSubjects(t *testing.T, c kubernetes.Interface) []rbacv1.Subject {
	t.Helper()
	crb, err := c.RbacV1().ClusterRoleBindings().Get(context.Background(), JoinServiceAccountsBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crb.Subjects
}

// TestJoinBindingSubjectsAreExactlyTheIssuedServiceAccounts: instances that
// join at once each get their subject in the one shared binding (updates
// retried on conflict); a subject whose ServiceAccount went away without its
// revocation (a crash in between) and anything that is not a join
// ServiceAccount are pruned by the next update; revocation leaves none.
func TestJoinBindingSubjectsAreExactlyTheIssuedServiceAccounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, admin := noBootstrapAuth(t)
	const ns = "winnode-join-binding"
	ensureNamespace(t, admin, ns)
	instances := []string{"wi-b0", "wi-b1", "wi-b2", "wi-b3", "wi-b4"}
	t.Cleanup(func() {
		for _, inst := range append(instances, "wi-b5") {
			_ = RevokeServiceAccount(context.Background(), admin, ns, inst)
		}
	})
	errs := make(chan error, len(instances))
	for _, inst := range instances {
		go func() {
			_, err := CreateServiceAccountToken(ctx, admin, ns, inst, 0)
			errs <- err
		}()
	}
	for range instances {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := namespaceSubjects(t, admin, ns); len(got) != len(instances) {
		t.Fatalf("after %d concurrent joins, subjects %v", len(instances), got)
	}

	// A crash between deleting a ServiceAccount and unbinding it, and a
	// subject someone slipped in: the next join prunes both.
	if err := admin.CoreV1().ServiceAccounts(ns).Delete(ctx, ServiceAccountName("wi-b0"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	crb, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, JoinServiceAccountsBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crb.Subjects = append(crb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "default"},
		rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "intruder"})
	if _, err := admin.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateServiceAccountToken(ctx, admin, ns, "wi-b5", 0); err != nil {
		t.Fatal(err)
	}
	got := namespaceSubjects(t, admin, ns)
	want := []string{"winnode-join-wi-b1", "winnode-join-wi-b2", "winnode-join-wi-b3", "winnode-join-wi-b4", "winnode-join-wi-b5"}
	if !slices.Equal(got, want) {
		t.Errorf("subjects after pruning %v, want %v", got, want)
	}
	for _, s := range joinSubjects(t, admin) {
		if s.Kind != rbacv1.ServiceAccountKind {
			t.Errorf("subject %v survived pruning", s)
		}
	}

	for _, inst := range append(instances, "wi-b5") {
		if err := RevokeServiceAccount(ctx, admin, ns, inst); err != nil {
			t.Fatal(err)
		}
	}
	if got := namespaceSubjects(t, admin, ns); len(got) != 0 {
		t.Errorf("subjects after every revocation: %v", got)
	}
}

// namespaceSubjects are the sorted names of the binding's subjects in ns.
func namespaceSubjects(t *testing.T, c kubernetes.Interface, ns string) []string {
	t.Helper()
	var names []string
	for _, s := range joinSubjects(t, c) {
		if s.Namespace == ns {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}

// instanceTokens lists the bootstrap tokens issued for instance.
func instanceTokens(ctx context.Context, c kubernetes.Interface, instance string) ([]*Token, error) {
	sel := labels.SelectorFromSet(labels.Set{winnodev1.LabelInstance: instance}).String()
	list, err := c.CoreV1().Secrets(TokenNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing bootstrap tokens of instance %s in %s: %w", instance, TokenNamespace, err)
	}
	var toks []*Token
	for i := range list.Items {
		if t := tokenFromSecret(&list.Items[i]); t != nil {
			toks = append(toks, t)
		}
	}
	return toks, nil
}
