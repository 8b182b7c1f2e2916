package config

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

// applyObjects really applies objects (server-side, as the install does).
func applyObjects(t *testing.T, c client.Client, objs []*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range objs {
		if len(kinds) > 0 && !containsString(kinds, o.GetKind()) {
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// impersonate is a client that acts as user (in groups).
func impersonate(t *testing.T, cfg *rest.Config, user string, groups ...string) client.Client {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	return newClient(t, cfg)
}

// asOperator is a client that acts as the operator's ServiceAccount.
func asOperator(t *testing.T, cfg *rest.Config) client.Client {
	return impersonate(t, cfg, "system:serviceaccount:"+namespace+":"+serviceAccount,
		"system:serviceaccounts", "system:serviceaccounts:"+namespace)
}

// deniedBy reports whether err is the refusal of ValidatingAdmissionPolicy
// policy (and not, say, RBAC's).
func deniedBy(err error, policy string) bool {
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'")
}

// waitPolicy waits until the API server enforces policy: the API server
// loads policies and bindings through informers, so the first requests after
// an apply may pass unchecked. probe must be a request the policy refuses.
func waitPolicy(t *testing.T, policy string, probe func(context.Context) error) {
	t.Helper()
	testkit.Eventually(t, time.Minute, "the API server enforcing "+policy, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := probe(ctx)
		return deniedBy(err, policy), fmt.Sprint(err)
	})
}

// secret is a Secret of type typ that the API server's validation accepts,
// so that what refuses it is the policy.
func secret(ns, name string, typ corev1.SecretType, labels map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Type: typ}
	switch typ {
	case corev1.SecretTypeServiceAccountToken:
		s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
	case corev1.SecretTypeBootstrapToken:
		id := strings.TrimPrefix(name, "bootstrap-token-")
		s.StringData = map[string]string{"token-id": id, "token-secret": "0123456789abcdef"}
	case corev1.SecretTypeTLS:
		s.StringData = map[string]string{corev1.TLSCertKey: "", corev1.TLSPrivateKeyKey: ""}
	case corev1.SecretTypeDockerConfigJson:
		s.StringData = map[string]string{corev1.DockerConfigJsonKey: "{}"}
	}
	return s
}

// TestOperatorSecretPolicy applies the RBAC and the policies of
// config/default for real and, as the operator's ServiceAccount, tries every
// Secret its RBAC lets it create or delete but the policy
// winnode-operator-secrets forbids: each is refused by the policy, while
// what the operator does write is admitted. Creations are dry runs (the
// API server admits them fully without storing them).
func TestOperatorSecretPolicy(t *testing.T) {
	env := testenv.Get(t)
	admin := newClient(t, env.Config)
	applyRBAC(t, admin)
	objs := build(t, "default")
	applyObjects(t, admin, objs, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	op := asOperator(t, env.Config)
	const policy = "winnode-operator-secrets"
	other := "winnode-policy-test"
	if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ours := map[string]string{"app.kubernetes.io/managed-by": "winnode-operator", "winnode.io/instance": "wi-1"}
	create := func(s *corev1.Secret) func(context.Context) error {
		return func(ctx context.Context) error { return op.Create(ctx, s, client.DryRunAll) }
	}
	waitPolicy(t, policy, create(secret(other, "sa-token", corev1.SecretTypeServiceAccountToken, nil)))

	for _, c := range []struct {
		what   string
		secret *corev1.Secret
	}{
		{"a service account token in its own namespace", secret(namespace, "sa-token", corev1.SecretTypeServiceAccountToken, nil)},
		{"a service account token in kube-system", secret("kube-system", "sa-token", corev1.SecretTypeServiceAccountToken, ours)},
		{"a service account token elsewhere", secret(other, "sa-token", corev1.SecretTypeServiceAccountToken, ours)},
		{"an Opaque Secret in kube-system", secret("kube-system", "opaque", corev1.SecretTypeOpaque, ours)},
		{"a bootstrap token without winnode's labels", secret("kube-system", "bootstrap-token-abcdef", corev1.SecretTypeBootstrapToken, nil)},
		{"a bootstrap token of another manager", secret("kube-system", "bootstrap-token-abcdef", corev1.SecretTypeBootstrapToken,
			map[string]string{"app.kubernetes.io/managed-by": "kubeadm", "winnode.io/instance": "wi-1"})},
		{"a TLS Secret", secret(other, "tls", corev1.SecretTypeTLS, nil)},
		{"a docker config", secret(namespace, "pull", corev1.SecretTypeDockerConfigJson, nil)},
	} {
		if err := create(c.secret)(context.Background()); !deniedBy(err, policy) {
			t.Errorf("the operator creating %s: %v; want the policy's refusal", c.what, err)
		}
	}
	for _, c := range []struct {
		what   string
		secret *corev1.Secret
	}{
		{"winnode's bootstrap token", secret("kube-system", "bootstrap-token-abcdef", corev1.SecretTypeBootstrapToken, ours)},
		{"user data", secret(namespace, "windows-user-data", corev1.SecretTypeOpaque, nil)},
		{"Cluster API bootstrap data", secret(other, "md-0-abc", "cluster.x-k8s.io/secret", nil)},
	} {
		if err := create(c.secret)(context.Background()); err != nil {
			t.Errorf("the operator creating %s: %v", c.what, err)
		}
	}
	checkKubeSystemDeletes(t, admin, op, ours)
}

// checkKubeSystemDeletes: in kube-system the operator may delete only
// winnode's bootstrap tokens (the Secrets are really created by an
// administrator; the operator's deletions are dry runs).
func checkKubeSystemDeletes(t *testing.T, admin, op client.Client, ours map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	token := func(id string, labels map[string]string) *corev1.Secret {
		return secret("kube-system", "bootstrap-token-"+id, corev1.SecretTypeBootstrapToken, labels)
	}
	for _, c := range []struct {
		secret *corev1.Secret
		may    bool
	}{
		{token("polic1", ours), true},
		{token("polic2", nil), false},
		{secret("kube-system", "winnode-policy-test-opaque", corev1.SecretTypeOpaque, ours), false},
	} {
		if err := admin.Create(ctx, c.secret); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), c.secret) })
		err := op.Delete(ctx, c.secret, client.DryRunAll)
		switch {
		case c.may && err != nil:
			t.Errorf("the operator deleting %s: %v", c.secret.Name, err)
		case !c.may && !deniedBy(err, "winnode-operator-secrets"):
			t.Errorf("the operator deleting %s: %v; want the policy's refusal", c.secret.Name, err)
		}
	}
}

// TestOperatorMayDeleteOnlyWindowsMachines applies the Machine API Role and
// the policy of config/openshift against a stand-in Machine CRD: as the
// operator's ServiceAccount, deleting a Windows Machine is admitted, deleting
// a Linux worker's Machine is refused by the policy.
func TestOperatorMayDeleteOnlyWindowsMachines(t *testing.T) {
	env := testenv.Get(t)
	admin := newClient(t, env.Config)
	installStandInCRD(t, admin, "machine.openshift.io", "Machine", "machines", apiextensionsv1.NamespaceScoped,
		apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)})
	const mapi, policy = "openshift-machine-api", "winnode-operator-machines"
	if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mapi}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	applyNamespace(t, admin, build(t, "default"))
	applyObjects(t, admin, readObjects(t, "openshift/machine_api_rbac.yaml"))
	applyObjects(t, admin, readObjects(t, "openshift/machine_api_policy.yaml"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	machine := func(name, os string) *unstructured.Unstructured {
		m := &unstructured.Unstructured{}
		m.SetAPIVersion("machine.openshift.io/v1")
		m.SetKind("Machine")
		m.SetNamespace(mapi)
		m.SetName(name)
		m.SetLabels(map[string]string{"machine.openshift.io/os-id": os})
		if err := admin.Create(ctx, m); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		return m
	}
	windows, linux := machine("windows-worker", "Windows"), machine("linux-worker", "Linux")
	op := asOperator(t, env.Config)
	waitPolicy(t, policy, func(ctx context.Context) error { return op.Delete(ctx, linux, client.DryRunAll) })
	if err := op.Delete(ctx, windows, client.DryRunAll); err != nil {
		t.Errorf("the operator deleting a Windows Machine: %v", err)
	}
}

// TestNodeCannotGiveItselfDNSAddresses applies the policy
// winnode-node-dns-addresses and acts as a node (NodeRestriction lets it
// create and update its own Node): it cannot add an InternalDNS or
// ExternalDNS address to its Node, at creation or later, while an
// administrator (standing in for a cloud controller manager) can, and the
// node may keep the addresses it was given.
func TestNodeCannotGiveItselfDNSAddresses(t *testing.T) {
	env := testenv.Get(t)
	admin := newClient(t, env.Config)
	applyObjects(t, admin, build(t, "default"), "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	const name, policy = "winnode-dns-policy-node", "winnode-node-dns-addresses"
	node := impersonate(t, env.Config, "system:node:"+name, "system:nodes")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "windows"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}, {Type: corev1.NodeHostName, Address: name}}}}
	withDNS := n.DeepCopy()
	withDNS.Status.Addresses = append(withDNS.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: "kubernetes.default.svc"})
	waitPolicy(t, policy, func(ctx context.Context) error { return node.Create(ctx, withDNS.DeepCopy(), client.DryRunAll) })

	if err := node.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("a node registering itself without DNS addresses: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), n) })
	// Patches (no resourceVersion): the node controller edits the Node too.
	addAddress := func(c client.Client, a corev1.NodeAddress) error {
		var got corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
			return err
		}
		changed := got.DeepCopy()
		changed.Status.Addresses = append(changed.Status.Addresses, a)
		return c.Status().Patch(ctx, changed, client.MergeFrom(&got))
	}
	if err := addAddress(node, corev1.NodeAddress{Type: corev1.NodeExternalDNS, Address: "evil.example.com"}); !deniedBy(err, policy) {
		t.Errorf("a node adding an ExternalDNS address to its own Node: %v; want the policy's refusal", err)
	}
	if err := addAddress(admin, corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: name + ".ec2.internal"}); err != nil {
		t.Fatalf("an administrator adding an InternalDNS address: %v", err)
	}
	// The node keeps the address it was given while it updates its status.
	var got corev1.Node
	if err := node.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	changed := got.DeepCopy()
	changed.Status.Conditions = append(changed.Status.Conditions, corev1.NodeCondition{Type: "WinnodePolicyTest", Status: corev1.ConditionTrue, Reason: "Test"})
	if err := node.Status().Patch(ctx, changed, client.MergeFrom(&got)); err != nil {
		t.Errorf("the node updating its status, keeping the DNS address it was given: %v", err)
	}
	// The approver sees the shipped policy as in force (it then approves
	// the DNS addresses a cloud controller manager set).
	if on, err := csrapproval.NodeDNSPolicyEnforced(ctx, kubernetes.NewForConfigOrDie(env.Config)); err != nil || !on {
		t.Errorf("NodeDNSPolicyEnforced with the shipped policy applied = %t, %v; want true", on, err)
	}
}

// TestOperatorNodeProxyOnlyHealthz applies the policy
// winnode-operator-node-proxy and asks the API server's node proxy as the
// operator's ServiceAccount (in group system:masters, so that RBAC lets
// every request through to admission): a kubelet path other than /healthz
// (exec, logs, the kubelet's pods) is refused by the policy, /healthz is
// not (it then fails on the Node, which does not exist), and another user
// is not held by the policy.
func TestOperatorNodeProxyOnlyHealthz(t *testing.T) {
	env := testenv.Get(t)
	admin := newClient(t, env.Config)
	applyObjects(t, admin, build(t, "default"), "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	const policy, node = "winnode-operator-node-proxy", "winnode-proxy-policy-node"
	proxy := func(cfg *rest.Config, path string) func(context.Context) error {
		kube := kubernetes.NewForConfigOrDie(cfg)
		return func(ctx context.Context) error {
			return kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", path).Do(ctx).Error()
		}
	}
	op := rest.CopyConfig(env.Config)
	op.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups: []string{"system:masters", "system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	waitPolicy(t, policy, proxy(op, "pods"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, path := range []string{"exec/default/p/c", "logs/", "containerLogs/default/p/c", "configz", "healthz/../pods", "healthzx"} {
		if err := proxy(op, path)(ctx); !deniedBy(err, policy) {
			t.Errorf("the operator through the node proxy to %s: %v; want the policy's refusal", path, err)
		}
	}
	if err := proxy(op, "healthz")(ctx); deniedBy(err, policy) || !apierrors.IsNotFound(err) {
		t.Errorf("the operator through the node proxy to healthz: %v; want the missing Node's not found", err)
	}
	if err := proxy(env.Config, "pods")(ctx); deniedBy(err, policy) || !apierrors.IsNotFound(err) {
		t.Errorf("an administrator through the node proxy to pods: %v; want the missing Node's not found", err)
	}
}
