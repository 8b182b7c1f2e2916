package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	return s
}()

var counter atomic.Int64

// world is a control plane serving Cluster API's Clusters, a namespace for
// the test's Clusters, and a Clusters registry whose workload clusters'
// winnode namespace is the test's own: the control plane is the workload
// cluster of every Cluster here (self-hosted), as reached through the
// kubeconfig Secret each test writes.
type world struct {
	env       *testenv.Env
	client    client.Client
	kube      kubernetes.Interface
	namespace string // of the Clusters and their Secrets
	clusters  *Clusters
	connected atomic.Int64 // OnConnect calls
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.GetWith(t, testenv.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config/crd/bases")}})
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: testenv.ClusterAPICRDs(t), ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	n := counter.Add(1)
	w := &world{env: env, client: c, kube: kubernetes.NewForConfigOrDie(env.Config), namespace: fmt.Sprintf("capi-%d-%d", os.Getpid()%100000, n)}
	w.clusters = &Clusters{Clusters: c, Secrets: c, Namespace: fmt.Sprintf("winnode-wl-%d-%d", os.Getpid()%100000, n), Scheme: testScheme}
	w.clusters.OnConnect(func(*Cluster) error { w.connected.Add(1); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = w.clusters.Start(ctx) }()
	t.Cleanup(cancel)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.namespace}}); err != nil {
		t.Fatal(err)
	}
	return w
}

// cluster creates a Cluster API Cluster named name.
func (w *world) cluster(t *testing.T, name string) winnodev1.ClusterRef {
	t.Helper()
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: name},
		Spec: clusterv1.ClusterSpec{Paused: new(bool), ClusterNetwork: clusterv1.ClusterNetwork{Services: clusterv1.NetworkRanges{CIDRBlocks: []string{testenv.ServiceCIDR}}}}}
	if err := w.client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return winnodev1.ClusterRef{Namespace: w.namespace, Name: name}
}

// secret writes Cluster name's kubeconfig Secret holding data (nil: the
// control plane's admin kubeconfig).
func (w *world) secret(t *testing.T, name string, data []byte) {
	t.Helper()
	s, err := w.env.KubeconfigSecret(w.namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		s.Data[KubeconfigKey] = data
	}
	if err := w.client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// As winnode's ServiceAccount in the workload cluster, the operator may do
// what a join needs there and nothing else; the admin kubeconfig made the
// ServiceAccount and its RBAC and is used for nothing more. The cluster's
// cache is started once, and a deleted ServiceAccount (its tokens revoked)
// is made again at the next request, with a new token.
func TestActsAsItsServiceAccount(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	ref := w.cluster(t, "self-hosted")
	w.secret(t, ref.Name, nil)
	wc, err := w.clusters.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	review, err := wc.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + w.clusters.Namespace + ":" + ServiceAccount; review.Status.UserInfo.Username != want {
		t.Errorf("acting as %q, want %q", review.Status.UserInfo.Username, want)
	}
	w.checkGrants(t, wc.Kube)
	var nodes corev1.NodeList
	if err := wc.Client.List(ctx, &nodes); err != nil {
		t.Errorf("listing Nodes from the cluster's cache: %v", err)
	}
	if _, err := w.clusters.Get(ctx, ref); err != nil || w.connected.Load() != 1 {
		t.Errorf("a second Get: %v, connected %d times (want once)", err, w.connected.Load())
	}

	if err := w.kube.CoreV1().ServiceAccounts(w.clusters.Namespace).Delete(ctx, ServiceAccount, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the ServiceAccount made again and its new token accepted", func() (bool, string) {
		_, err := wc.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, fmt.Sprint(err)
	})
}

// checkGrants checks what kube (as the ServiceAccount) may do.
func (w *world) checkGrants(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ns := w.clusters.Namespace
	type access = authorizationv1.ResourceAttributes
	need := []access{
		{Verb: "watch", Resource: "nodes"}, {Verb: "patch", Resource: "nodes"}, {Verb: "delete", Resource: "nodes"},
		{Verb: "list", Resource: "pods"}, {Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "default"},
		{Verb: "get", Group: "apps", Resource: "daemonsets", Namespace: "kube-system"},
		{Verb: "watch", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
		{Verb: "update", Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval"},
		{Verb: "approve", Group: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kube-apiserver-client-kubelet"},
		{Verb: "approve", Group: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kubelet-serving"},
		{Verb: "create", Resource: "secrets", Namespace: "kube-system"},
		{Verb: "delete", Resource: "secrets", Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
		{Verb: "patch", Resource: "secrets", Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
		{Verb: "get", Resource: "configmaps", Namespace: "kube-public", Name: "cluster-info"},
		{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "kubelet-config"},
		{Verb: "get", Resource: "configmaps", Namespace: "kube-flannel", Name: "kube-flannel-cfg"},
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Resource: "serviceaccounts", Namespace: ns},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: ns, Name: "winnode-join-a"},
		{Verb: "update", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings", Name: "winnode-join-service-accounts"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "system:node-bootstrapper"},
	}
	mustNot := []access{
		{Verb: "list", Resource: "secrets", Namespace: "kube-system"},
		{Verb: "get", Resource: "secrets", Namespace: "default", Name: "x"},
		{Verb: "get", Resource: "secrets", Namespace: w.namespace, Name: "self-hosted-kubeconfig"},
		{Verb: "update", Resource: "nodes"}, {Verb: "create", Resource: "nodes"},
		{Verb: "create", Resource: "pods", Namespace: "default"}, {Verb: "delete", Resource: "pods", Namespace: "default"},
		{Verb: "delete", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
		{Verb: "approve", Group: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kube-apiserver-client"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "create", Resource: "serviceaccounts", Namespace: "kube-system"},
		{Verb: "get", Group: "cluster.x-k8s.io", Resource: "clusters", Namespace: w.namespace},
		{Verb: "list", Group: "winnode.io", Resource: "windowsinstances"},
	}
	for _, tc := range []struct {
		list []access
		want bool
	}{{need, true}, {mustNot, false}} {
		for _, a := range tc.list {
			r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Allowed != tc.want {
				t.Errorf("winnode's ServiceAccount: %s %s/%s %s %s/%s allowed %t, want %t", a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace, a.Name, r.Status.Allowed, tc.want)
			}
		}
	}
}

// A Cluster that does not exist, a kubeconfig Secret that is missing,
// malformed, refused by winnode or pointing at an API server that does
// not answer or refuses its user: each is an Error naming the cause, and
// nothing is created in the workload cluster. Once the Secret is right,
// the cluster is used.
func TestCauseIsNamedAndNothingIsCreated(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	check := func(ref winnodev1.ClusterRef, reason string) {
		t.Helper()
		_, err := w.clusters.Get(ctx, ref)
		var we *Error
		if !errors.As(err, &we) || we.Reason != reason || we.Cluster != ref {
			t.Errorf("Cluster %s: %v, want an Error of reason %s", ref, err, reason)
		}
		if _, err := w.kube.CoreV1().Namespaces().Get(ctx, w.clusters.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Cluster %s (%s): winnode's namespace was created in the workload cluster: %v", ref, reason, err)
		}
	}
	check(winnodev1.ClusterRef{Namespace: w.namespace, Name: "absent"}, ReasonClusterNotFound)
	check(w.cluster(t, "no-secret"), ReasonKubeconfigSecretNotFound)
	w.cluster(t, "garbled")
	w.secret(t, "garbled", []byte("this is not a kubeconfig: {"))
	check(winnodev1.ClusterRef{Namespace: w.namespace, Name: "garbled"}, ReasonKubeconfigInvalid)

	admin, err := w.env.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	edited := func(edit func(*clientcmdapi.Config)) []byte {
		cfg, err := clientcmd.Load(admin)
		if err != nil {
			t.Fatal(err)
		}
		edit(cfg)
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for name, tc := range map[string]struct {
		edit   func(*clientcmdapi.Config)
		reason string
	}{
		"exec": {func(c *clientcmdapi.Config) {
			for _, u := range c.AuthInfos {
				u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1"}
			}
		}, ReasonKubeconfigInvalid},
		"unreachable": {func(c *clientcmdapi.Config) {
			for _, cl := range c.Clusters {
				cl.Server = "https://127.0.0.1:1"
			}
		}, ReasonUnreachable},
		"refused": {func(c *clientcmdapi.Config) {
			for _, u := range c.AuthInfos {
				u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, "not-a-token"
			}
		}, ReasonAccessNotInstalled},
	} {
		w.cluster(t, name)
		w.secret(t, name, edited(tc.edit))
		check(winnodev1.ClusterRef{Namespace: w.namespace, Name: name}, tc.reason)
	}
	if w.connected.Load() != 0 {
		t.Errorf("connected %d times to clusters that cannot be used", w.connected.Load())
	}

	ref := winnodev1.ClusterRef{Namespace: w.namespace, Name: "no-secret"}
	w.secret(t, ref.Name, nil)
	if _, err := w.clusters.Get(ctx, ref); err != nil {
		t.Errorf("with its Secret written: %v", err)
	}
}

// A connected cluster whose kubeconfig Secret is deleted, or whose Cluster
// is gone, is no longer used: its cache stops, and the cause is named.
func TestSecretOrClusterGoneStopsTheCluster(t *testing.T) {
	w := newWorld(t)
	w.clusters.RecheckEvery = time.Millisecond
	ctx := context.Background()
	ref := w.cluster(t, "short-lived")
	w.secret(t, ref.Name, nil)
	if _, err := w.clusters.Get(ctx, ref); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: KubeconfigSecretName(ref.Name)}}
	if err := w.client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	var we *Error
	if _, err := w.clusters.Get(ctx, ref); !errors.As(err, &we) || we.Reason != ReasonKubeconfigSecretNotFound {
		t.Errorf("after the Secret's deletion: %v", err)
	}
	w.secret(t, ref.Name, nil)
	if _, err := w.clusters.Get(ctx, ref); err != nil || w.connected.Load() != 2 {
		t.Errorf("with the Secret back: %v, connected %d times (want 2: it was stopped)", err, w.connected.Load())
	}
	if err := w.client.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.clusters.Get(ctx, ref); !errors.As(err, &we) || we.Reason != ReasonClusterNotFound {
		t.Errorf("after the Cluster's deletion: %v", err)
	}
}
