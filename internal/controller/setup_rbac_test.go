package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/testkit"
)

// TestJoinCredentialsUnderGeneratedRBAC makes the operator's own bootstrap
// calls as a user that holds only config/rbac/role.yaml: the permissions
// the markers declare (internal/bootstrap's among them) are enough for
// them. Each call waits for the RBAC authorizer, which sees the roles just
// applied through informers (the kube-public Role that LoadClusterInfo
// needs apart from the ClusterRole that EnsureRBAC needs). The controllers
// are run under the same roles in their own packages' tests.
func TestJoinCredentialsUnderGeneratedRBAC(t *testing.T) {
	w := controllertest.NewWorld(t)
	asOperator := kubernetes.NewForConfigOrDie(w.OperatorConfig(t))
	ctx := context.Background()
	testkit.Eventually(t, 30*time.Second, "EnsureRBAC as the operator", func() (bool, string) {
		err := bootstrap.EnsureRBAC(ctx, asOperator)
		return err == nil, fmt.Sprint(err)
	})
	testkit.Eventually(t, 30*time.Second, "LoadClusterInfo as the operator", func() (bool, string) {
		_, err := bootstrap.LoadClusterInfo(ctx, asOperator)
		return err == nil, fmt.Sprint(err)
	})
	joinCredentialsAs(t, asOperator, w.Namespace)
}

// joinCredentialsAs issues and revokes join credentials of both forms as the
// operator (asOperator holds only the generated roles): the auto probe
// (a bootstrap token, TokenReview), a bootstrap token read back by its ID,
// and a join ServiceAccount, its subject in the shipped binding and its
// token. Each call waits for the RBAC authorizer to see the roles just
// applied.
func joinCredentialsAs(t *testing.T, asOperator kubernetes.Interface, namespace string) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, 30*time.Second, "auto join credentials probed as the operator", func() (bool, string) {
		_, _, err := (&bootstrap.Detector{Kube: asOperator}).Resolve(ctx, bootstrap.ModeAuto)
		return err == nil, fmt.Sprint(err)
	})
	instance := namespace + "-rbac-join"
	testkit.Eventually(t, 30*time.Second, "a bootstrap token issued, read and revoked as the operator", func() (bool, string) {
		tok, err := bootstrap.CreateToken(ctx, asOperator, instance, time.Hour)
		if err != nil {
			return false, "creating: " + err.Error()
		}
		if _, err := bootstrap.GetToken(ctx, asOperator, tok.ID); err != nil {
			return false, "reading: " + err.Error()
		}
		if err := bootstrap.RevokeInstanceToken(ctx, asOperator, instance, tok.ID); err != nil {
			return false, "revoking: " + err.Error()
		}
		return true, "revoked"
	})
	testkit.Eventually(t, 30*time.Second, "a join ServiceAccount token issued and revoked as the operator", func() (bool, string) {
		tok, err := bootstrap.CreateServiceAccountToken(ctx, asOperator, namespace, instance, 0)
		if err != nil {
			return false, "issuing: " + err.Error()
		}
		if err := bootstrap.RecordServiceAccountKubeconfig(ctx, asOperator, tok, "0"); err != nil {
			return false, "recording the kubeconfig: " + err.Error()
		}
		if !joinBound(ctx, t, asOperator, namespace, tok.Name) {
			t.Errorf("ServiceAccount %s is not a subject of %s after the token was issued", tok.Name, bootstrap.JoinServiceAccountsBinding)
		}
		if err := bootstrap.RevokeServiceAccount(ctx, asOperator, namespace, instance); err != nil {
			return false, "revoking: " + err.Error()
		}
		if joinBound(ctx, t, asOperator, namespace, tok.Name) {
			t.Errorf("ServiceAccount %s is still a subject of %s after revocation", tok.Name, bootstrap.JoinServiceAccountsBinding)
		}
		return true, "revoked"
	})
}

// joinBound reports whether ServiceAccount namespace/name is a subject of
// the join ServiceAccounts' binding.
func joinBound(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace, name string) bool {
	t.Helper()
	crb, err := c.RbacV1().ClusterRoleBindings().Get(ctx, bootstrap.JoinServiceAccountsBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s as the operator: %v", bootstrap.JoinServiceAccountsBinding, err)
	}
	for _, s := range crb.Subjects {
		if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == name {
			return true
		}
	}
	return false
}
