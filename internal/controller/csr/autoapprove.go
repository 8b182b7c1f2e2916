package csr

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/winnode/winnode/internal/csrapproval"
)

// EventReasonAutoApprovalBypass is the warning on a ClusterRoleBinding
// through which kube-controller-manager approves winnode hosts' client
// certificates before winnode checks them.
const EventReasonAutoApprovalBypass = "AutoApprovalBypassesChecks"

// Reading ClusterRoleBindings (their subjects, nothing secret) to warn.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=list

// AutoApprovalWarner checks once, when the operator starts (as leader),
// whether the cluster auto-approves node client certificates for the
// bootstrappers group (csrapproval.AutoApprovingBindings), and if so says
// so in a log line and a Warning event on each such binding. It changes
// nothing: kubeadm's own joins of Linux nodes may rely on that binding.
type AutoApprovalWarner struct {
	Kube     kubernetes.Interface
	Recorder events.EventRecorder
}

// Start runs the check; a failure is logged, never fatal (the warning is
// advice, approval works without it).
func (w *AutoApprovalWarner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("csr-approver")
	bindings, err := csrapproval.AutoApprovingBindings(ctx, w.Kube)
	if err != nil {
		log.Error(err, "could not check for auto-approval of node client certificates")
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(bindings)) {
		group := bindings[name]
		log.Info("WARNING: the cluster auto-approves node client certificates for the bootstrappers group, bypassing winnode's CSR checks",
			"clusterRoleBinding", name, "group", group, "clusterRole", csrapproval.NodeClientRole)
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
		binding.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"))
		w.Recorder.Eventf(binding, nil, corev1.EventTypeWarning, EventReasonAutoApprovalBypass, "Check",
			"ClusterRoleBinding %s grants group %s the ClusterRole %s: kube-controller-manager approves the client certificate a winnode host's bootstrap token asks for, for any node name, before winnode checks it. Delete the binding unless Linux nodes still join with kubeadm join (docs/approval.md)",
			name, group, csrapproval.NodeClientRole)
	}
	return nil
}
