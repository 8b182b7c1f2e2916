package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// JoinServiceAccountsBinding is the one ClusterRoleBinding that lets join
// ServiceAccounts create CSRs: ClusterRole system:node-bootstrapper, bound
// to exactly the join ServiceAccounts issued now. The install manifests
// ship it with no subjects (config/rbac/bindings.yaml).
//
// Why one binding of a fixed name rather than one per ServiceAccount:
// making bindings means "create" on ClusterRoleBindings, which cannot be
// limited by name, and a process that may create any binding may bind
// itself to cluster-admin. The operator may only read and update these two
// bindings (resourceNames below), so the most it can grant is what
// system:node-bootstrapper allows (and "bind" limits it to that role).
const JoinServiceAccountsBinding = "winnode-join-service-accounts"

// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,resourceNames=winnode-join-service-accounts;winnode:bootstrappers:node-bootstrapper,verbs=get;update;patch

// addJoinSubject makes the instance's join ServiceAccount a subject of
// JoinServiceAccountsBinding.
func addJoinSubject(ctx context.Context, c kubernetes.Interface, namespace, instance string) error {
	return updateJoinSubjects(ctx, c, namespace, ServiceAccountName(instance), true)
}

// removeJoinSubject takes it out again (revocation).
func removeJoinSubject(ctx context.Context, c kubernetes.Interface, namespace, instance string) error {
	return updateJoinSubjects(ctx, c, namespace, ServiceAccountName(instance), false)
}

// updateJoinSubjects adds (or removes) ServiceAccount namespace/name in the
// binding's subjects. Several instances join at once, so the change is
// retried on conflict from a fresh read. Every update also prunes what a
// crash may have left: subjects in namespace whose ServiceAccount is gone,
// and anything that is not a join ServiceAccount at all.
func updateJoinSubjects(ctx context.Context, c kubernetes.Interface, namespace, name string, add bool) error {
	crbs := c.RbacV1().ClusterRoleBindings()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crb, err := crbs.Get(ctx, JoinServiceAccountsBinding, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if !add {
				return nil
			}
			return createJoinBinding(ctx, c, namespace, name)
		}
		if err != nil {
			return err
		}
		if crb.RoleRef != nodeBootstrapperRef() {
			return fmt.Errorf("it grants %s %s, not ClusterRole %s: delete it and apply config/rbac again", crb.RoleRef.Kind, crb.RoleRef.Name, nodeBootstrapperRole)
		}
		subjects, err := liveJoinSubjects(ctx, c, namespace, crb.Subjects)
		if err != nil {
			return err
		}
		js := joinSubject(namespace, name)
		switch {
		case add && !slices.Contains(subjects, js):
			subjects = append(subjects, js)
		case !add:
			subjects = slices.DeleteFunc(subjects, func(s rbacv1.Subject) bool { return s == js })
		}
		if equality.Semantic.DeepEqual(subjects, crb.Subjects) {
			return nil
		}
		crb.Subjects = subjects
		_, err = crbs.Update(ctx, crb, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		what := "removing"
		if add {
			what = "adding"
		}
		return fmt.Errorf("%s ServiceAccount %s/%s in ClusterRoleBinding %s: %w", what, namespace, name, JoinServiceAccountsBinding, err)
	}
	return nil
}

// liveJoinSubjects are the subjects to keep: join ServiceAccounts of other namespaces (another winnode, or winnodectl's in
// kube-system: not ours to check), and those of namespace that still exist
// as winnode made them.
func liveJoinSubjects(ctx context.Context, c kubernetes.Interface, namespace string, subjects []rbacv1.Subject) ([]rbacv1.Subject, error) {
	keep := []rbacv1.Subject{}
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind || !strings.HasPrefix(s.Name, serviceAccountPrefix) || s.APIGroup != "" {
			continue // never a join ServiceAccount: no place here
		}
		if s.Namespace == namespace {
			sa, err := c.CoreV1().ServiceAccounts(namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue // revoked (a crash came before the subject went)
			}
			if err != nil {
				return nil, err
			}
			if sa.Labels[winnodev1.LabelInstance] == "" {
				continue // not one winnode made
			}
		}
		keep = append(keep, s)
	}
	return keep, nil
}

// createJoinBinding creates the binding where the manifests were not
// applied (winnodectl on a cluster without the operator, run by an
// administrator). The operator may not create bindings: for it, that is an
// error that says what to do.
func createJoinBinding(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: JoinServiceAccountsBinding, Labels: map[string]string{"app.kubernetes.io/part-of": "winnode"}},
		RoleRef:    nodeBootstrapperRef(),
		Subjects:   []rbacv1.Subject{joinSubject(namespace, name)},
	}
	_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made meanwhile by another: read it again and add to it.
		return apierrors.NewConflict(rbacv1.Resource("clusterrolebindings"), crb.Name, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("it does not exist, and may not be created here (%w): apply the install manifests (config/rbac), which ship it", err)
	}
	return err
}

func joinSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func nodeBootstrapperRef() rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nodeBootstrapperRole}
}
