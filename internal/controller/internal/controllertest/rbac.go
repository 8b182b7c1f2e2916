package controllertest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/testenv"
)

// markersNamespace is the operator namespace the +kubebuilder:rbac markers
// name (controller.DefaultNamespace).
const markersNamespace = "winnode-system"

// OperatorConfig is a client configuration of a user that holds only the
// roles of config/rbac/role.yaml, generated from the +kubebuilder:rbac
// markers (with the operator namespace replaced by the world's), and the
// bindings the manifests ship: a controller run as that user proves that
// the permissions its markers declare are enough. The RBAC authorizer sees
// the roles through informers, a moment after they are created.
func (w *World) OperatorConfig(t *testing.T) *rest.Config {
	t.Helper()
	user := "winnode-operator-" + w.Namespace
	w.applyGeneratedRBAC(t, user)
	cfg, err := w.Env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// applyGeneratedRBAC creates the roles of config/rbac/role.yaml (generated
// from the +kubebuilder:rbac markers) for user, with the operator namespace
// winnode-system replaced by the world's, and the bindings the manifests ship
// (config/rbac/bindings.yaml), which the operator may update, not create.
func (w *World) applyGeneratedRBAC(t *testing.T, user string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	w.applyShippedBindings(t, filepath.Join(root, "config/rbac/bindings.yaml"))
	data, err := os.ReadFile(filepath.Join(root, "config/rbac/role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
			continue
		}
		switch meta.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			if err := yaml.Unmarshal(doc, &cr); err != nil {
				t.Fatal(err)
			}
			cr.Name = user
			if _, err := w.Kube.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}
			if _, err := w.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = w.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
				_ = w.Kube.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
			})
		case "Role":
			var role rbacv1.Role
			if err := yaml.Unmarshal(doc, &role); err != nil {
				t.Fatal(err)
			}
			if role.Namespace == markersNamespace {
				role.Namespace = w.Namespace
			}
			role.Name = user
			// openshift-machine-api's Role: that namespace exists on OpenShift only.
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: role.Namespace}}
			if _, err := w.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			if _, err := w.Kube.RbacV1().Roles(role.Namespace).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: role.Namespace}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}
			if _, err := w.Kube.RbacV1().RoleBindings(role.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roleNS := role.Namespace
			t.Cleanup(func() {
				_ = w.Kube.RbacV1().RoleBindings(roleNS).Delete(context.Background(), user, metav1.DeleteOptions{})
				_ = w.Kube.RbacV1().Roles(roleNS).Delete(context.Background(), user, metav1.DeleteOptions{})
			})
		}
	}
}

// applyShippedBindings creates the ClusterRoleBindings of file where they do
// not exist yet (the control plane is shared by this package's tests).
func (w *World) applyShippedBindings(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var crb rbacv1.ClusterRoleBinding
		if err := yaml.Unmarshal(doc, &crb); err != nil || crb.Kind != "ClusterRoleBinding" {
			t.Fatalf("%s: a document that is not a ClusterRoleBinding (%v)", file, err)
		}
		_, err = w.Kube.RbacV1().ClusterRoleBindings().Create(context.Background(), &crb, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}
