package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// podOn runs a pod on a Windows node (the stand-in kubelet reports it
// Running) and returns it.
func (w *world) podOn(t testing.TB, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "iis-" + node, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: "os", Value: "Windows", Effect: corev1.TaintEffectNoSchedule}},
			Containers:  []corev1.Container{{Name: "iis", Image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019"}},
		},
	}
	if _, err := w.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.kube.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	testkit.Eventually(t, time.Minute, "pod "+pod.Name+" to run on the Windows node", func() (bool, string) {
		p, err := w.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	return pod
}

// waitGone waits until the instance no longer exists.
func (w *world) waitGone(t testing.TB, name string, timeout time.Duration) {
	t.Helper()
	testkit.Eventually(t, timeout, "WindowsInstance "+name+" to be gone", func() (bool, string) {
		cur := &winnodev1.WindowsInstance{}
		err := w.client.Get(context.Background(), client.ObjectKey{Name: name}, cur)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, string(cur.Status.Phase) + " " + cur.Status.Step + " " + cur.Status.LastError
	})
}

// checkDeconfigured checks what deconfiguring left: the pod evicted, the
// Node and the token gone, winnode's services and files gone from the host,
// the containerd it installed with them (the logs kept).
func (w *world) checkDeconfigured(t testing.TB, inst *winnodev1.WindowsInstance, h *winsim.Host, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod bound to the node was not evicted: %v", err)
	}
	if _, err := w.kube.CoreV1().Nodes().Get(ctx, inst.Status.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s still exists: %v", inst.Status.NodeName, err)
	}
	w.checkJoinCredentialsGone(t, inst.Name, winnodev1.WindowsInstanceStatus{})
	// The host's containerd is winnode's (containerRuntime Managed): it
	// goes with the rest.
	for _, name := range []string{"kubelet", "kube-proxy", "containerd"} {
		if _, err := h.Services().Get(name); !errors.Is(err, simscm.ErrNotFound) {
			t.Errorf("service %s still on the host: %v", name, err)
		}
	}
	for _, f := range []string{simpayload.KubeletHostPath, simpayload.AgentHostPath, simpayload.ContainerdHostPath, plan.KubeletConfigPath, plan.BootstrapKubeconfigPath, plan.ContainerdConfigPath} {
		if hostFileExists(t, h, f) {
			t.Errorf("%s is still on the host", f)
		}
	}
	if !hostFileExists(t, h, plan.KubeletLogDir) {
		t.Errorf("the kubelet's logs (%s) were not kept", plan.KubeletLogDir)
	}
	w.waitEvents(t, metav1.NamespaceDefault, inst.Name, "Removed")
}

// A host that cannot be reached while its instance is deleted is left
// alone, with an event; the instance, its Node and its token go anyway.
func TestDeletedInstanceOfUnreachableHost(t *testing.T) {
	eachAPIServer(t, testDeletedInstanceOfUnreachableHost)
}

func testDeletedInstanceOfUnreachableHost(t *testing.T, w *world) {
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "lost", h)
	inst := w.waitReady(t, "lost", 3*time.Minute)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.client.Delete(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, "lost", 2*time.Minute)
	if _, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s still exists: %v", inst.Status.NodeName, err)
	}
	w.checkJoinCredentialsGone(t, "lost", winnodev1.WindowsInstanceStatus{})
	w.waitEvents(t, metav1.NamespaceDefault, "lost", "HostLeftAlone")
}
