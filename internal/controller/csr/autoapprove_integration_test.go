package csr

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/csrapproval"
)

// TestAutoApprovalWarning: against the real API server, a ClusterRoleBinding
// that lets kube-controller-manager auto-approve node client certificates
// for winnode's bootstrappers group gets a Warning event when the operator
// starts; one for another group does not.
func TestAutoApprovalWarning(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	bind := func(name, group string) {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: csrapproval.NodeClientRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		}
		if _, err := w.Kube.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = w.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	bypass, harmless := w.Namespace+"-autoapprove-winnode", w.Namespace+"-autoapprove-other"
	bind(bypass, bootstrap.Group)
	bind(harmless, w.Namespace+"-some-other-group")

	w.StartManager(t, func(mgr ctrl.Manager) error {
		return mgr.Add(&AutoApprovalWarner{Kube: w.Kube, Recorder: mgr.GetEventRecorder("winnode-csr-approver")})
	})
	controllertest.Eventually(t, 30*time.Second, "a warning on "+bypass, func(ctx context.Context) (bool, error) {
		evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, bypass, EventReasonAutoApprovalBypass)
		return len(evs) == 1, err
	})
	evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, harmless, EventReasonAutoApprovalBypass)
	if err != nil || len(evs) != 0 {
		t.Fatalf("a binding for another group got %d warnings (%v)", len(evs), err)
	}
}
