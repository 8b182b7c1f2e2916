package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
)

// applyGeneratedRBAC creates the roles of config/rbac/role.yaml (generated
// from this package's markers) for user, with the operator namespace
// winnode-system replaced by namespace, and the bindings the manifests ship
// (config/rbac/bindings.yaml), which the operator may update, not create.
func applyGeneratedRBAC(t *testing.T, w *world, user string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	applyShippedBindings(t, w, filepath.Join(root, "config/rbac/bindings.yaml"))
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
			if _, err := w.kube.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}
			if _, err := w.kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = w.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
				_ = w.kube.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
			})
		case "Role":
			var role rbacv1.Role
			if err := yaml.Unmarshal(doc, &role); err != nil {
				t.Fatal(err)
			}
			if role.Namespace == DefaultNamespace {
				role.Namespace = w.namespace
			}
			role.Name = user
			// openshift-machine-api's Role: that namespace exists on OpenShift only.
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: role.Namespace}}
			if _, err := w.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			if _, err := w.kube.RbacV1().Roles(role.Namespace).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: role.Namespace}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}
			if _, err := w.kube.RbacV1().RoleBindings(role.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roleNS := role.Namespace
			t.Cleanup(func() {
				_ = w.kube.RbacV1().RoleBindings(roleNS).Delete(context.Background(), user, metav1.DeleteOptions{})
				_ = w.kube.RbacV1().Roles(roleNS).Delete(context.Background(), user, metav1.DeleteOptions{})
			})
		}
	}
}

// applyShippedBindings creates the ClusterRoleBindings of file where they do
// not exist yet (the control plane is shared by this package's tests).
func applyShippedBindings(t *testing.T, w *world, file string) {
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
		_, err = w.kube.RbacV1().ClusterRoleBindings().Create(context.Background(), &crb, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// TestControllersUnderGeneratedRBAC runs the keys, sources and CSR
// controllers as a user that holds only config/rbac/role.yaml: the
// permissions the markers declare are enough for them to work.
func TestControllersUnderGeneratedRBAC(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	user := "winnode-operator-" + w.namespace
	applyGeneratedRBAC(t, w, user)
	cfg, err := w.env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	asOperator := kubernetes.NewForConfigOrDie(cfg)
	// The operator's own bootstrap calls, as that user. Each waits for the
	// RBAC authorizer, which sees the roles just applied through informers
	// (the kube-public Role that LoadClusterInfo needs apart from the
	// ClusterRole that EnsureRBAC needs).
	eventually(t, 30*time.Second, "EnsureRBAC as the operator", func(ctx context.Context) (bool, error) {
		return true, bootstrap.EnsureRBAC(ctx, asOperator)
	})
	eventually(t, 30*time.Second, "LoadClusterInfo as the operator", func(ctx context.Context) (bool, error) {
		_, err := bootstrap.LoadClusterInfo(ctx, asOperator)
		return true, err
	})

	joinCredentialsAs(t, asOperator, w.namespace)

	dec := &decisions{m: map[string]csrapproval.Decision{}}
	w.startManagerAs(t, cfg, func(mgr ctrl.Manager) error {
		if err := (&KeysReconciler{Client: mgr.GetClient(), Namespace: w.namespace}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&SourcesReconciler{Client: mgr.GetClient(), Namespace: w.namespace, Recorder: mgr.GetEventRecorder("winnode-sources")}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&CSRApprover{Client: mgr.GetClient(), Kube: asOperator, Recorder: mgr.GetEventRecorder("winnode-csr-approver"), OnDecision: dec.record}).SetupWithManager(mgr)
	})

	// Keys: the user data Secret is created (with its owner reference) and updated.
	if err := w.client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: sshkey.PrivateKeySecret},
		Data:       map[string][]byte{sshkey.PrivateKeyKey: testKeyPEM(t)},
	}); err != nil {
		t.Fatal(err)
	}
	w.waitUserDataFor(t, mustParse(t, testKeyPEM(t)).PublicKey())

	// Sources: an instance created, a bad entry reported.
	const addr = "10.250.2.1"
	t.Cleanup(func() { w.forgetInstance(inventory.InstanceName(addr)) })
	if err := w.client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: inventory.InstancesConfigMap},
		Data:       map[string]string{addr: "username=u", "10.250.2.300": "username=u"},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the instance created as the operator", func(ctx context.Context) (bool, error) {
		_, err := w.instance(ctx, addr)
		return err == nil, client.IgnoreNotFound(err)
	})
	eventually(t, 30*time.Second, "the bad entry reported as the operator", func(ctx context.Context) (bool, error) {
		counts, err := w.invalidEntryEvents(ctx)
		return counts["10.250.2.300"] == 1, err
	})

	// CSR approval.
	node := w.namespace + "-rbac"
	tok := w.managedInstance(t, w.namespace+"-wi-rbac", node, "127.0.0.210")
	asHost := fixture.BootstrapClient(t, w.kube, *tok)
	eventually(t, 30*time.Second, "the bootstrap token authenticates", func(ctx context.Context) (bool, error) {
		_, err := asHost.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
	w.createCSR(t, asHost, w.namespace+"-rbac-client", certificatesv1.KubeAPIServerClientKubeletSignerName,
		csrTemplate{CN: "system:node:" + node, O: []string{"system:nodes"}}, clientUsages)
	eventually(t, 60*time.Second, "the CSR approved as the operator", func(ctx context.Context) (bool, error) {
		csr, err := w.kube.CertificatesV1().CertificateSigningRequests().Get(ctx, w.namespace+"-rbac-client", metav1.GetOptions{})
		return err == nil && approved(csr), err
	})
}

// joinCredentialsAs issues and revokes join credentials of both forms as the
// operator (asOperator holds only the generated roles): the auto probe
// (a bootstrap token, TokenReview), a bootstrap token read back by its ID,
// and a join ServiceAccount, its subject in the shipped binding and its
// token. Each call waits for the RBAC authorizer to see the roles just
// applied.
func joinCredentialsAs(t *testing.T, asOperator kubernetes.Interface, namespace string) {
	t.Helper()
	eventually(t, 30*time.Second, "auto join credentials probed as the operator", func(ctx context.Context) (bool, error) {
		_, _, err := (&bootstrap.Detector{Kube: asOperator}).Resolve(ctx, bootstrap.ModeAuto)
		return true, err
	})
	instance := namespace + "-rbac-join"
	eventually(t, 30*time.Second, "a bootstrap token issued, read and revoked as the operator", func(ctx context.Context) (bool, error) {
		tok, err := bootstrap.CreateToken(ctx, asOperator, instance, time.Hour)
		if err != nil {
			return true, err
		}
		if _, err := bootstrap.GetToken(ctx, asOperator, tok.ID); err != nil {
			return true, err
		}
		return true, bootstrap.RevokeInstanceToken(ctx, asOperator, instance, tok.ID)
	})
	eventually(t, 30*time.Second, "a join ServiceAccount token issued and revoked as the operator", func(ctx context.Context) (bool, error) {
		tok, err := bootstrap.CreateServiceAccountToken(ctx, asOperator, namespace, instance, 0)
		if err != nil {
			return true, err
		}
		if err := bootstrap.RecordServiceAccountKubeconfig(ctx, asOperator, tok, "0"); err != nil {
			return true, err
		}
		if !joinBound(ctx, t, asOperator, namespace, tok.Name) {
			t.Errorf("ServiceAccount %s is not a subject of %s after the token was issued", tok.Name, bootstrap.JoinServiceAccountsBinding)
		}
		if err := bootstrap.RevokeServiceAccount(ctx, asOperator, namespace, instance); err != nil {
			return true, err
		}
		if joinBound(ctx, t, asOperator, namespace, tok.Name) {
			t.Errorf("ServiceAccount %s is still a subject of %s after revocation", tok.Name, bootstrap.JoinServiceAccountsBinding)
		}
		return true, nil
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
