// Package controllertest is what the tests of the operator's controllers
// (internal/controller and its packages) share: a World on the test binary's
// control plane (internal/testenv) with a namespace of its own, a manager
// shaped like the operator's, and the generated RBAC applied to a user.
package controllertest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testenv"
)

// Main is the TestMain of a controller package: controller-runtime's log
// on stderr, and the control plane of testenv.Main.
func Main(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	testenv.Main(m)
}

// Scheme holds client-go's types and winnode.io/v1alpha1.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(winnodev1.AddToScheme(s))
	return s
}()

// World is one test's view of the shared control plane: an admin client, a
// clientset, and a namespace of its own.
type World struct {
	Env       *testenv.Env
	Client    client.Client // direct, uncached
	Kube      kubernetes.Interface
	Namespace string
}

var nsCounter atomic.Int64

// NewWorld creates the test's namespace, deleted when the test ends.
func NewWorld(t *testing.T) *World {
	t.Helper()
	env := testenv.Get(t)
	c, err := client.New(env.Config, client.Options{Scheme: Scheme})
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
	return &World{Env: env, Client: c, Kube: kube, Namespace: ns}
}

// StartManager runs a manager shaped like cmd/winnode-operator's (cache
// restricted to the namespace, no leader election, no listeners) with the
// controllers register adds, until the test ends.
func (w *World) StartManager(t *testing.T, register func(mgr ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	return w.StartManagerAs(t, w.Env.Config, register)
}

// StartManagerAs is StartManager with the manager talking as cfg's user.
func (w *World) StartManagerAs(t *testing.T, cfg *rest.Config, register func(mgr ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	return w.StartManagerLogged(t, cfg, logr.Logger{}, register)
}

// StartManagerLogged is StartManagerAs with the manager and its
// controllers logging to log (the zero Logger: controller-runtime's).
func (w *World) StartManagerLogged(t *testing.T, cfg *rest.Config, log logr.Logger, register func(mgr ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:                 log,
		Scheme:                 Scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{w.Namespace: {}}},
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

// ForgetInstance removes an instance for good, finalizer included (tests
// that run without the instance reconciler that would remove it).
func (w *World) ForgetInstance(name string) {
	ctx := context.Background()
	var wi winnodev1.WindowsInstance
	if err := w.Client.Get(ctx, client.ObjectKey{Name: name}, &wi); err != nil {
		return
	}
	wi.Finalizers = nil
	_ = w.Client.Update(ctx, &wi)
	_ = w.Client.Delete(ctx, &wi)
}

// EventsFor lists the events.k8s.io Events about the named object with reason.
func (w *World) EventsFor(ctx context.Context, namespace, name, reason string) ([]eventsv1.Event, error) {
	list, err := w.Kube.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

// KeyPEM is an ed25519 key in OpenSSH form.
func KeyPEM(t testing.TB) []byte { return fixture.PEMOpenSSH(t, fixture.PrivateKeys()["ed25519"]) }
