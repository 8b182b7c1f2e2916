package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/controller/keys"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testkit"
)

func TestMain(m *testing.M) { controllertest.Main(m) }

// TestNewManagerRunsTheOperatorsControllers: NewManager, as
// cmd/winnode-operator calls it, builds a manager whose cache covers the
// operator namespace only, with working controllers (here: the user data
// appears for a key) and the winnode_* metrics.
func TestNewManagerRunsTheOperatorsControllers(t *testing.T) {
	w := controllertest.NewWorld(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte("not really kubelet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := payload.Write(dir, []payload.File{{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Version: "v1.37.1"}}); err != nil {
		t.Fatal(err)
	}
	mo := ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if _, err := NewManager(w.Env.Config, mo, Options{Namespace: w.Namespace}); err == nil || !strings.Contains(err.Error(), "payload") {
		t.Fatalf("NewManager without a payload: %v, want an error about the payload", err)
	}
	mgr, err := NewManager(w.Env.Config, mo, Options{Namespace: w.Namespace, PayloadDir: dir, Version: "v0.0.0-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := fixture.RunManager(t, mgr)
	// Namespaced objects are cached in the operator namespace only: one
	// elsewhere is not found, it is refused.
	outside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: w.Namespace + "-outside"}}
	if err := w.Client.Create(ctx, outside); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Client.Delete(context.Background(), outside) })
	if err := mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(outside), &corev1.ConfigMap{}); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("reading a ConfigMap of namespace default through the manager's cache: %v; want it refused (operator namespace only)", err)
	}
	if err := w.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: sshkey.PrivateKeySecret},
		Data:       map[string][]byte{sshkey.PrivateKeyKey: controllertest.KeyPEM(t)},
	}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "Secret windows-user-data rendered by the keys controller", func() (bool, string) {
		var ud corev1.Secret
		err := w.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: keys.UserDataSecret}, &ud)
		return err == nil && len(ud.Data[keys.UserDataKey]) > 0, fmt.Sprintf("%d bytes of user data (%v)", len(ud.Data[keys.UserDataKey]), err)
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
	for _, name := range []string{"winnode_instances", "winnode_configuration_duration_seconds", "winnode_bytes_uploaded_total", "winnode_ssh_failures_total",
		"winnode_csr_decisions_total", "winnode_machines_left_alone_total"} {
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
