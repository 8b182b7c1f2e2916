package bootstrap

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeBootstrapperBinding is the ClusterRoleBinding EnsureRBAC keeps: group
// Group → ClusterRole system:node-bootstrapper (create/get/list/watch
// CertificateSigningRequests), which is all a kubelet needs to request its
// client certificate with a bootstrap token.
//
// Deliberately NOT bound: system:certificates.k8s.io:certificatesigningrequests:nodeclient
// (kubeadm binds it). kube-controller-manager's csrapproving controller
// auto-approves every node client CSR whose requester holds that permission,
// which would approve CSRs for any node name and bypass the operator's
// checks (internal/controller/csr). The operator is the approver.
const NodeBootstrapperBinding = "winnode:bootstrappers:node-bootstrapper"

// nodeBootstrapperRole is the ClusterRole every Kubernetes API server creates
// at startup for kubelet TLS bootstrapping.
const nodeBootstrapperRole = "system:node-bootstrapper"

// What EnsureRBAC needs (hack/generate.sh turns these into config/rbac/role.yaml);
// get and update of its binding, by name, are in joinbinding.go's rule. The
// install manifests ship the binding (config/rbac/bindings.yaml); the
// operator may not create or delete bindings (who may create any binding
// may bind itself to cluster-admin).
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,resourceNames=system:node-bootstrapper,verbs=bind

// EnsureRBAC creates or repairs the RBAC that group Group needs. It is
// idempotent and safe to call from several instances at once. Creating it,
// or replacing one whose role was changed, needs an administrator's rights
// (winnodectl); the operator, which may only update it, says so instead.
func EnsureRBAC(ctx context.Context, c kubernetes.Interface) error {
	want := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:   NodeBootstrapperBinding,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "winnode-operator"},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nodeBootstrapperRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: Group}},
	}
	crbs := c.RbacV1().ClusterRoleBindings()
	got, err := crbs.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = crbs.Create(ctx, want, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating ClusterRoleBinding %s: %w (apply the install manifests, config/rbac, which ship it)", want.Name, err)
	case err != nil:
		return fmt.Errorf("reading ClusterRoleBinding %s: %w", want.Name, err)
	}
	if equality.Semantic.DeepEqual(got.Subjects, want.Subjects) && got.RoleRef == want.RoleRef {
		return nil
	}
	if got.RoleRef == want.RoleRef {
		got.Subjects = want.Subjects // someone edited them: put them back
		if _, err := crbs.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("repairing the subjects of ClusterRoleBinding %s: %w", want.Name, err)
		}
		return nil
	}
	// roleRef is immutable: replace a binding someone changed.
	if err := crbs.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("replacing ClusterRoleBinding %s that points elsewhere: %w (delete it and apply config/rbac again)", want.Name, err)
	}
	if _, err := crbs.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recreating ClusterRoleBinding %s: %w", want.Name, err)
	}
	return nil
}
