package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	testenv.Main(m)
}

var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(winnodev1.AddToScheme(s))
	return s
}()

// world is one test's view of the shared control plane: an admin client, a
// clientset, and a namespace of its own.
type world struct {
	env       *testenv.Env
	client    client.Client // direct, uncached
	kube      kubernetes.Interface
	namespace string
}

var nsCounter atomic.Int64

func newWorld(t *testing.T) *world {
	t.Helper()
	env := testenv.Get(t)
	c, err := client.New(env.Config, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("winnode-test-%d-%d", os.Getpid()%100000, nsCounter.Add(1))
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return &world{env: env, client: c, kube: kube, namespace: ns}
}

// startManager runs a manager shaped like cmd/winnode-operator's (cache
// restricted to the namespace, no leader election, no listeners) with the
// controllers register adds, until the test ends.
func (w *world) startManager(t *testing.T, register func(mgr ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	return w.startManagerAs(t, w.env.Config, register)
}

// startManagerAs is startManager with the manager talking as cfg's user.
func (w *world) startManagerAs(t *testing.T, cfg *rest.Config, register func(mgr ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{w.namespace: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each test's manager runs controllers with the same names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx := fixture.RunManager(t, mgr)
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("the manager's cache did not sync within 30s")
	}
	return mgr
}

// eventually polls cond every 100ms for up to timeout, failing with what.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if last != nil {
			t.Fatalf("%s: not within %v (last error: %v)", what, timeout, last)
		}
		t.Fatalf("%s: not within %v", what, timeout)
	}
}

// forgetInstance removes an instance for good, finalizer included (the tests
// of this file run without the instance reconciler that would remove it).
func (w *world) forgetInstance(name string) {
	ctx := context.Background()
	var wi winnodev1.WindowsInstance
	if err := w.client.Get(ctx, client.ObjectKey{Name: name}, &wi); err != nil {
		return
	}
	wi.Finalizers = nil
	_ = w.client.Update(ctx, &wi)
	_ = w.client.Delete(ctx, &wi)
}

// TestSetupRunsTheOperatorsControllers: Setup, as cmd/winnode-operator calls
// it, registers working controllers (here: the user data appears for a key)
// and the winnode_* metrics.
func TestSetupRunsTheOperatorsControllers(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte("not really kubelet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := payload.Write(dir, []payload.File{{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Version: "v1.37.1"}}); err != nil {
		t.Fatal(err)
	}
	w.startManager(t, func(mgr ctrl.Manager) error {
		if err := Setup(mgr, Options{Namespace: w.namespace}); err == nil || !strings.Contains(err.Error(), "payload") {
			return fmt.Errorf("Setup without a payload: %v, want an error about the payload", err)
		}
		return Setup(mgr, Options{Namespace: w.namespace, PayloadDir: dir, Version: "v0.0.0-test"})
	})
	ctx := context.Background()
	if err := w.client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: sshkey.PrivateKeySecret},
		Data:       map[string][]byte{sshkey.PrivateKeyKey: testKeyPEM(t)},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Secret windows-user-data rendered by the keys controller", func(ctx context.Context) (bool, error) {
		var ud corev1.Secret
		err := w.client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: UserDataSecret}, &ud)
		return err == nil && len(ud.Data[UserDataKey]) > 0, client.IgnoreNotFound(err)
	})

	RecordUpload(10)
	RecordSSHFailure(winnodev1.ReasonUnreachable)
	RecordConfiguration(42 * time.Second)
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	phases := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
		if f.GetName() == "winnode_instances" {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					phases[l.GetValue()] = true
				}
			}
		}
	}
	for _, name := range []string{"winnode_instances", "winnode_configuration_duration_seconds", "winnode_bytes_uploaded_total", "winnode_ssh_failures_total"} {
		if !found[name] {
			t.Errorf("metric %s is not registered", name)
		}
	}
	for _, p := range []winnodev1.Phase{winnodev1.PhasePending, winnodev1.PhaseReady, winnodev1.PhaseFailed} {
		if !phases[string(p)] {
			t.Errorf("winnode_instances has no series for phase %s", p)
		}
	}
}
