package testenv

import (
	"context"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// A Node gets its pod subnet from the controller manager, and a pod without
// a node is bound by the scheduler to a Ready node that fits it, as in a
// kubeadm cluster.
func TestNodesGetSubnetsAndPodsAreScheduled(t *testing.T) {
	env := Get(t)
	c := admin(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := builder.Node("world-test-node").Labels(map[string]string{"kubernetes.io/os": "linux"}).Build()
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	cluster := netip.MustParsePrefix(ClusterCIDR)
	testkit.Eventually(t, 2*time.Minute, "a spec.podCIDR on node "+node.Name+" (is kube-controller-manager allocating node CIDRs?)", func() (bool, string) {
		n, err := c.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if n.Spec.PodCIDR == "" {
			return false, "none"
		}
		p, err := netip.ParsePrefix(n.Spec.PodCIDR)
		if err != nil || p.Bits() != 24 || !cluster.Contains(p.Addr()) {
			t.Fatalf("node %s got podCIDR %q, want a /24 of %s", n.Name, n.Spec.PodCIDR, ClusterCIDR)
		}
		return true, ""
	})

	// Ready, with room for a pod: what a kubelet would report (the node
	// lifecycle controller writes the Node too: retry on conflicts).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")}
		n.Status.Allocatable = n.Status.Capacity
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "world-test-pod", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Containers:   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			// The node lifecycle controller may still taint the node
			// not-ready for a moment.
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}},
		},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{}) })
	testkit.Eventually(t, 2*time.Minute, "pod "+pod.Name+" bound to node "+node.Name+" (is kube-scheduler running?)", func() (bool, string) {
		p, err := c.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == node.Name, "bound to " + p.Spec.NodeName
	})
}
