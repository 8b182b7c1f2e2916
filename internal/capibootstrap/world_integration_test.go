package capibootstrap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/optional"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
	"github.com/winnode/winnode/internal/workload"
)

// operatorNamespace is where the operator's key Secret lives in these tests.
const operatorNamespace = "winnode-system"

var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	utilruntime.Must(bootstrapv1.AddToScheme(s))
	utilruntime.Must(winnodev1.AddToScheme(s))
	return s
}()

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// capiWorld is a control plane with winnode's CRDs and Cluster API's Machine
// and Cluster CRDs, and the bootstrap provider running in a manager shaped
// like cmd/winnode-operator's, as a user that holds only the generated
// RBAC (config/rbac/role.yaml). Cluster API's controllers do not run here:
// the tests set the Machine owner reference on a WinnodeConfig, as Cluster
// API's Machine controller does.
type capiWorld struct {
	env       *testenv.Env
	client    client.Client // admin, uncached
	namespace string        // the test's namespace for Clusters, Machines and configs
	key       fixture.Key
}

var nsCounter atomic.Int64

func newCAPIWorld(t *testing.T) *capiWorld {
	t.Helper()
	env := testenv.GetWith(t, testenv.Options{CRDDirectoryPaths: []string{filepath.Join(repoRoot(t), "config/crd/bases")}})
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: testenv.ClusterAPICRDs(t), ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing Cluster API's CRDs: %v", err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("capi-test-%d-%d", os.Getpid()%100000, nsCounter.Add(1))
	for _, name := range []string{operatorNamespace, ns} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	w := &capiWorld{env: env, client: c, namespace: ns, key: fixture.NewKey(t)}
	w.putKey(t)
	return w
}

// putKey writes the operator's private key Secret (shared by the package's
// tests: the last writer's key is the one the provider reads).
func (w *capiWorld) putKey(t *testing.T) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: sshkey.PrivateKeySecret}}
	_, err := ctrl.CreateOrUpdate(context.Background(), w.client, s, func() error {
		s.Data = map[string][]byte{sshkey.PrivateKeyKey: w.key.PEM}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var userCounter atomic.Int64

// operatorConfig returns a rest.Config for a new user holding the roles of
// config/rbac/role.yaml, generated from the +kubebuilder:rbac markers, and
// get on Secrets in the Clusters' namespace: what the ClusterRole
// winnode-workload-kubeconfigs grants where an administrator binds it
// (config/rbac/workload_kubeconfigs.yaml).
func (w *capiWorld) operatorConfig(t *testing.T) *rest.Config {
	t.Helper()
	user := fmt.Sprintf("winnode-capi-test-%d", userCounter.Add(1))
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "config/rbac/role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	ctx := context.Background()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.Role // a ClusterRole decodes the same, without namespace
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatal(err)
		}
		w.bind(ctx, t, role, subject, user)
	}
	kubeconfigs := rbacv1.Role{TypeMeta: metav1.TypeMeta{Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	w.bind(ctx, t, kubeconfigs, subject, user)
	cfg := rest.CopyConfig(w.env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return cfg
}

// bind creates role (a Role or ClusterRole of role.yaml) for user, and its binding.
func (w *capiWorld) bind(ctx context.Context, t *testing.T, role rbacv1.Role, subject []rbacv1.Subject, user string) {
	t.Helper()
	var objs []client.Object
	switch role.Kind {
	case "ClusterRole":
		objs = []client.Object{
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: role.Rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
		}
	case "Role":
		if err := w.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: role.Namespace}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		objs = []client.Object{
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: user}, Rules: role.Rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: user}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}},
		}
	default:
		return
	}
	for _, o := range objs {
		if err := w.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.client.Delete(context.Background(), o) })
	}
}

// startOperator runs the provider as the operator would (Part through
// optional.NewManager, on a manager whose cache covers the operator
// namespace only, but for what the part adds) until the test ends.
func (w *capiWorld) startOperator(t *testing.T) {
	t.Helper()
	w.startOperatorWith(t, Pull{Version: "v0.5.2"})
}

// startOperatorWith is startOperator with pull as the provider's Pull
// options.
func (w *capiWorld) startOperatorWith(t *testing.T, pull Pull) {
	t.Helper()
	workloads := &workload.Clusters{Namespace: operatorNamespace}
	mgr, err := optional.NewManager(w.operatorConfig(t), ctrl.Options{
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{operatorNamespace: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}, workload.Part(workloads, Required, TurnOn), Part(operatorNamespace, workloads, pull))
	if err != nil {
		t.Fatal(err)
	}
	fixture.RunManager(t, mgr)
}

// cluster creates a Cluster API Cluster, and its kubeconfig Secret: its
// workload cluster is the test's control plane (self-hosted).
func (w *capiWorld) cluster(t *testing.T, name string, isPaused bool) *clusterv1.Cluster {
	t.Helper()
	w.kubeconfigSecret(t, name, nil)
	return w.bareCluster(t, name, isPaused)
}

// kubeconfigSecret writes the kubeconfig Secret of Cluster name, holding
// data (nil: the control plane's admin kubeconfig).
func (w *capiWorld) kubeconfigSecret(t *testing.T, name string, data []byte) {
	t.Helper()
	s, err := w.env.KubeconfigSecret(w.namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		s.Data[workload.KubeconfigKey] = data
	}
	if err := w.client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// bareCluster creates a Cluster API Cluster without its kubeconfig Secret.
func (w *capiWorld) bareCluster(t *testing.T, name string, isPaused bool) *clusterv1.Cluster {
	t.Helper()
	// spec may not be empty: paused is set either way.
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: name}, Spec: clusterv1.ClusterSpec{Paused: ptr.To(isPaused)}}
	if err := w.client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// machineWithConfig creates a Machine of cluster whose bootstrap config is a
// WinnodeConfig of the same name with spec, and that config, owned by the
// Machine as Cluster API's Machine controller makes it (owner reference,
// cluster-name label).
func (w *capiWorld) machineWithConfig(t *testing.T, cluster, name string, spec bootstrapv1.WinnodeConfigSpec) *bootstrapv1.WinnodeConfig {
	t.Helper()
	ctx := context.Background()
	m := builder.CAPIMachine(w.namespace, name).Cluster(cluster).Bootstrap(bootstrapv1.GroupVersion.Group, "WinnodeConfig", name).
		Infrastructure("infrastructure.cluster.x-k8s.io", "WinsimMachine", name).Build()
	if err := w.client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	cfg := w.config(name, spec)
	cfg.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster}
	cfg.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID,
	}}
	if err := w.client.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// config is a WinnodeConfig of spec; an empty mode is Push, the mode these
// tests' bootstrap data is written in.
func (w *capiWorld) config(name string, spec bootstrapv1.WinnodeConfigSpec) *bootstrapv1.WinnodeConfig {
	if spec.Mode == "" {
		spec.Mode = bootstrapv1.ModePush
	}
	return &bootstrapv1.WinnodeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: name}, Spec: spec}
}

// waitFor polls the config until cond holds (or a minute passes) and
// returns it.
func (w *capiWorld) waitFor(t *testing.T, name, what string, cond func(*bootstrapv1.WinnodeConfig) bool) *bootstrapv1.WinnodeConfig {
	t.Helper()
	var cfg bootstrapv1.WinnodeConfig
	testkit.Eventually(t, time.Minute, "WinnodeConfig "+name+": "+what, func() (bool, string) {
		if err := w.client.Get(context.Background(), client.ObjectKey{Namespace: w.namespace, Name: name}, &cfg); err != nil {
			return false, err.Error()
		}
		return cond(&cfg), fmt.Sprintf("status %+v", cfg.Status)
	})
	return &cfg
}

// events returns the notes of the events about the config with reason.
func (w *capiWorld) events(t *testing.T, name, reason string) []string {
	t.Helper()
	var list corev1.EventList
	if err := w.client.List(context.Background(), &list, client.InNamespace(w.namespace)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "WinnodeConfig" && e.InvolvedObject.Name == name && e.Reason == reason {
			notes = append(notes, e.Message)
		}
	}
	return notes
}
