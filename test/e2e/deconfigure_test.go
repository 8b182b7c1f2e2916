package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winsim/scm"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// A deleted instance (an entry removed from the source): its Node is
// drained (a pod bound to it is evicted), the host's services and files are
// removed (logs kept), the Node is deleted and the token is gone.
func TestDeletedInstanceIsDeconfigured(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "gone", h)
	inst := w.waitReady(t, "gone", 3*time.Minute)
	ctx := context.Background()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "iis", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeName:    inst.Status.NodeName,
			Tolerations: []corev1.Toleration{{Key: "os", Value: "Windows", Effect: corev1.TaintEffectNoSchedule}},
			Containers:  []corev1.Container{{Name: "iis", Image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019"}},
		},
	}
	if _, err := w.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}) })
	eventually(t, time.Minute, "the pod to run on the Windows node", func() (bool, string) {
		p, err := w.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})

	if err := w.client.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the WindowsInstance to be gone", func() (bool, string) {
		err := w.client.Get(ctx, client.ObjectKey{Name: "gone"}, &winnodev1.WindowsInstance{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		cur := &winnodev1.WindowsInstance{}
		_ = w.client.Get(ctx, client.ObjectKey{Name: "gone"}, cur)
		return false, string(cur.Status.Phase) + " " + cur.Status.Step
	})

	if _, err := w.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod bound to the node was not evicted: %v", err)
	}
	if _, err := w.kube.CoreV1().Nodes().Get(ctx, inst.Status.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s still exists: %v", inst.Status.NodeName, err)
	}
	if toks := w.instanceTokens(t, "gone"); len(toks) != 0 {
		t.Errorf("%d bootstrap tokens of the instance remain", len(toks))
	}
	for _, name := range []string{"kubelet", "kube-proxy"} {
		if _, err := h.Services().Get(name); !errors.Is(err, scm.ErrNotFound) {
			t.Errorf("service %s still on the host: %v", name, err)
		}
	}
	if svc, err := h.Services().Get("containerd"); err != nil || svc.Status.State != scm.Running {
		t.Errorf("containerd (not winnode's) should still run: %v %v", svc.Status.State, err)
	}
	for _, f := range []string{simpayload.KubeletHostPath, simpayload.AgentHostPath, plan.KubeletConfigPath, plan.BootstrapKubeconfigPath} {
		if hostFileExists(t, h, f) {
			t.Errorf("%s is still on the host", f)
		}
	}
	if !hostFileExists(t, h, plan.KubeletLogDir) {
		t.Errorf("the kubelet's logs (%s) were not kept", plan.KubeletLogDir)
	}
	if reasons := w.eventReasons(t, "gone"); !slices.Contains(reasons, "Removed") {
		t.Errorf("events %v lack Removed", reasons)
	}
}

// A host that cannot be reached while its instance is deleted is left
// alone, with an event; the instance, its Node and its token go anyway.
func TestDeletedInstanceOfUnreachableHost(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "lost", h)
	inst := w.waitReady(t, "lost", 3*time.Minute)
	ctx := context.Background()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.client.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the WindowsInstance of the unreachable host to be gone", func() (bool, string) {
		err := w.client.Get(ctx, client.ObjectKey{Name: "lost"}, &winnodev1.WindowsInstance{})
		return apierrors.IsNotFound(err), "still there"
	})
	if _, err := w.kube.CoreV1().Nodes().Get(ctx, inst.Status.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s still exists: %v", inst.Status.NodeName, err)
	}
	if reasons := w.eventReasons(t, "lost"); !slices.Contains(reasons, "HostLeftAlone") {
		t.Errorf("events %v lack HostLeftAlone", reasons)
	}
}
