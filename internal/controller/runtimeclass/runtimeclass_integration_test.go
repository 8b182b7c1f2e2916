package runtimeclass

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/testkit"
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

	matches := func(name string) func() (bool, string) {
		return func() (bool, string) {
			var rc nodev1.RuntimeClass
			if err := w.Client.Get(ctx, client.ObjectKey{Name: name}, &rc); err != nil {
				return false, err.Error()
			}
			s := rc.Scheduling
			ok := rc.Handler == Handler && s != nil && s.NodeSelector[corev1.LabelOSStable] == "windows" &&
				s.NodeSelector[corev1.LabelWindowsBuild] == WindowsReleases[name] && len(s.Tolerations) == 1 &&
				s.Tolerations[0].Value == "Windows" && s.Tolerations[0].Effect == corev1.TaintEffectNoSchedule
			return ok, fmt.Sprintf("handler %q, scheduling %+v", rc.Handler, s)
		}
	}
	for _, name := range []string{"windows-2019", "windows-2022"} {
		testkit.Eventually(t, 30*time.Second, "RuntimeClass "+name, matches(name))
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
	testkit.Eventually(t, 30*time.Second, "RuntimeClass windows-2022 restored", matches("windows-2022"))
	if err := w.Client.Delete(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "windows-2019"}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "RuntimeClass windows-2019 made again", matches("windows-2019"))

	// Someone else's is left as it was, with a warning.
	testkit.Eventually(t, 30*time.Second, "a warning about the foreign windows-2025", func() (bool, string) {
		evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, "windows-2025", EventReasonNotOurs)
		return err == nil && len(evs) > 0, fmt.Sprintf("%d %s events (%v)", len(evs), EventReasonNotOurs, err)
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
	createPod(t, w, pod)
	if pod.Spec.NodeSelector[corev1.LabelWindowsBuild] != "10.0.20348" || pod.Spec.NodeSelector[corev1.LabelOSStable] != "windows" || len(pod.Spec.Tolerations) == 0 {
		t.Errorf("pod with RuntimeClass windows-2022: nodeSelector %v, tolerations %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
}

// createPod creates a pod once the namespace's default ServiceAccount
// exists: the ServiceAccount admission plugin refuses pods of a namespace
// without it, and kube-controller-manager creates it a moment after the
// namespace. (The plugin asks the API server itself when its cache has not
// seen the ServiceAccount yet.)
func createPod(t *testing.T, w *controllertest.World, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, 30*time.Second, "the default ServiceAccount of namespace "+pod.Namespace, func() (bool, string) {
		_, err := w.Kube.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if err := w.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
}
