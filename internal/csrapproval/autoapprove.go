package csrapproval

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/bootstrap"
)

// NodeClientRole is the ClusterRole whose holders kube-controller-manager's
// csrapproving controller auto-approves kubelet client CSRs for (its
// "nodeclient" check, a SubjectAccessReview of create on
// certificatesigningrequests/nodeclient), whatever node name they ask for.
const NodeClientRole = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"

// bootstrapperGroups are the groups every winnode bootstrap token is in
// (the API server puts every bootstrap token in system:bootstrappers).
var bootstrapperGroups = []string{"system:bootstrappers", bootstrap.Group}

// AutoApprovingBindings names the ClusterRoleBindings that grant
// NodeClientRole to a group winnode's bootstrap tokens are in, each with
// the group. With one, kube-controller-manager approves a winnode host's
// client CSR for any node name before winnode's checks (Decide) run:
// winnode cannot prevent that, so the operator warns (docs/approval.md).
// kubeadm creates one (kubeadm:node-autoapprove-bootstrap) for its own
// joins.
func AutoApprovingBindings(ctx context.Context, kube kubernetes.Interface) (map[string]string, error) {
	list, err := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ClusterRoleBindings to find auto-approval of node client certificates: %w", err)
	}
	out := map[string]string{}
	for _, b := range list.Items {
		if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != NodeClientRole {
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.GroupKind && slices.Contains(bootstrapperGroups, s.Name) {
				out[b.Name] = s.Name
			}
		}
	}
	return out, nil
}
