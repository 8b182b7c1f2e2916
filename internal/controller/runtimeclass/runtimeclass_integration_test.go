package runtimeclass

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/controller/internal/controllertest"
)

func TestMain(m *testing.M) { controllertest.Main(m) }

// TestRuntimeClasses: winnode's RuntimeClasses appear, come back when
// changed or deleted, place pods (through the real RuntimeClass admission
// plugin) on Windows nodes of their build with the taint tolerated, and one
// of the same name that winnode did not make is left alone.
func TestRuntimeClasses(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	// Someone else's windows-2025, made before the operator starts.
	foreign := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "windows-2025"}, Handler: "other"}
	if err := w.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for name := range WindowsReleases {
			_ = w.Client.Delete(context.Background(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	w.StartManager(t, func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})

	matches := func(name string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			var rc nodev1.RuntimeClass
			if err := w.Client.Get(ctx, client.ObjectKey{Name: name}, &rc); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			s := rc.Scheduling
			return rc.Handler == Handler && s != nil && s.NodeSelector[corev1.LabelOSStable] == "windows" &&
				s.NodeSelector[corev1.LabelWindowsBuild] == WindowsReleases[name] && len(s.Tolerations) == 1 &&
				s.Tolerations[0].Value == "Windows" && s.Tolerations[0].Effect == corev1.TaintEffectNoSchedule, nil
		}
	}
	for _, name := range []string{"windows-2019", "windows-2022"} {
		controllertest.Eventually(t, 30*time.Second, "RuntimeClass "+name, matches(name))
	}

	// Changed: its scheduling is put back. Deleted: it comes back.
	var rc nodev1.RuntimeClass
	if err := w.Client.Get(ctx, client.ObjectKey{Name: "windows-2022"}, &rc); err != nil {
		t.Fatal(err)
	}
	rc.Scheduling.NodeSelector[corev1.LabelWindowsBuild] = "10.0.17763"
	if err := w.Client.Update(ctx, &rc); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, 30*time.Second, "RuntimeClass windows-2022 restored", matches("windows-2022"))
	if err := w.Client.Delete(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "windows-2019"}}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, 30*time.Second, "RuntimeClass windows-2019 made again", matches("windows-2019"))

	// Someone else's is left as it was, with a warning.
	controllertest.Eventually(t, 30*time.Second, "a warning about the foreign windows-2025", func(ctx context.Context) (bool, error) {
		evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, "windows-2025", EventReasonNotOurs)
		return len(evs) > 0, err
	})
	var got nodev1.RuntimeClass
	if err := w.Client.Get(ctx, client.ObjectKey{Name: "windows-2025"}, &got); err != nil || got.Handler != "other" || got.Scheduling != nil {
		t.Errorf("the foreign RuntimeClass was changed: %+v, %v", got, err)
	}

	// A pod naming windows-2022 gets its node selector and toleration from
	// the API server's RuntimeClass admission plugin.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: w.Namespace},
		Spec: corev1.PodSpec{
			RuntimeClassName: ptr.To("windows-2022"),
			Containers:       []corev1.Container{{Name: "web", Image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}},
		},
	}
	if err := createPod(ctx, w, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeSelector[corev1.LabelWindowsBuild] != "10.0.20348" || pod.Spec.NodeSelector[corev1.LabelOSStable] != "windows" || len(pod.Spec.Tolerations) == 0 {
		t.Errorf("pod with RuntimeClass windows-2022: nodeSelector %v, tolerations %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
}

// createPod creates a pod once the namespace's default ServiceAccount
// exists (the ServiceAccount admission plugin needs it).
func createPod(ctx context.Context, w *controllertest.World, pod *corev1.Pod) error {
	var err error
	for range 60 {
		if err = w.Client.Create(ctx, pod); err == nil || !apierrors.IsForbidden(err) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("creating pod %s: %w", pod.Name, err)
}
