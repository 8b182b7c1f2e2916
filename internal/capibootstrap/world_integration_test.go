package capibootstrap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	"github.com/winnode/winnode/internal/controller/optional"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// operatorNamespace is where the operator's key Secret lives in these tests.
const operatorNamespace = "winnode-system"

var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	utilruntime.Must(bootstrapv1.AddToScheme(s))
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

// clusterAPICRDs returns Cluster API's own Machine and Cluster CRDs, from
// the source of sigs.k8s.io/cluster-api at the release whose API types
// (sigs.k8s.io/cluster-api/api) go.mod requires, fetched through the Go
// module proxy into the module cache. The full module is not a dependency:
// only its CRD files are read.
func clusterAPICRDs(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	out, err := exec.Command("go", "-C", root, "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/cluster-api/api").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/cluster-api/api: %v", err)
	}
	version := strings.TrimSpace(string(out))
	cmd := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/cluster-api@"+version)
	cmd.Dir = t.TempDir() // outside any module: nothing is added to go.mod or go.sum
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go mod download sigs.k8s.io/cluster-api@%s: %v\n%s%s", version, err, out, stderr.String())
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download sigs.k8s.io/cluster-api@%s: no folder in %s (%v)", version, out, err)
	}
	bases := filepath.Join(mod.Dir, "core/config/crd/bases")
	return []string{filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"), filepath.Join(bases, "cluster.x-k8s.io_machines.yaml")}
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
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: clusterAPICRDs(t), ErrorIfPathMissing: true}); err != nil {
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
// config/rbac/role.yaml, generated from the +kubebuilder:rbac markers.
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
	mgr, err := optional.NewManager(w.operatorConfig(t), ctrl.Options{
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{operatorNamespace: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}, Part(operatorNamespace))
	if err != nil {
		t.Fatal(err)
	}
	fixture.RunManager(t, mgr)
}

// cluster creates a Cluster API Cluster.
func (w *capiWorld) cluster(t *testing.T, name string, isPaused bool) *clusterv1.Cluster {
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

func (w *capiWorld) config(name string, spec bootstrapv1.WinnodeConfigSpec) *bootstrapv1.WinnodeConfig {
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
