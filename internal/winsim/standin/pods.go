package standin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// runPods watches the pods bound to this node and plays the part of their
// containers: admitted pods are reported Running (no container runs), pods
// that cannot run on Windows are rejected as the kubelet rejects them, and
// pods being deleted are finished off, so that drains and evictions end.
func (k *kubelet) runPods(ctx context.Context) {
	lw := cache.NewListWatchFromClient(k.client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		fields.OneTermEqualSelector("spec.nodeName", k.nodeName))
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		obj, exists, err := informer.GetStore().GetByKey(key)
		if err == nil && exists {
			err = k.syncPod(ctx, obj.(*corev1.Pod))
		}
		var retry *retryAfter
		switch {
		case errors.As(err, &retry):
			queue.Forget(key)
			queue.AddAfter(key, retry.d)
		case err != nil && ctx.Err() == nil:
			k.log.Warningf("syncing pod %s: %v", key, err)
			queue.AddRateLimited(key)
		default:
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

func (k *kubelet) syncPod(ctx context.Context, pod *corev1.Pod) error {
	pods := k.client.CoreV1().Pods(pod.Namespace)
	if pod.DeletionTimestamp != nil {
		// The containers are "stopped" at once; finish the deletion.
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To(int64(0)),
			Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		k.releasePodIP(ctx, pod)
		k.log.Infof("pod %s/%s deleted", pod.Namespace, pod.Name)
		return nil
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	if reason, msg := k.admit(pod); reason != "" {
		st := pod.Status.DeepCopy()
		st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, msg
		p := pod.DeepCopy()
		p.Status = *st
		_, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err == nil {
			k.log.Infof("pod %s/%s rejected: %s", pod.Namespace, pod.Name, msg)
		}
		return err
	}
	if pod.Status.Phase == corev1.PodRunning && len(pod.Status.ContainerStatuses) == len(pod.Spec.Containers) {
		return nil
	}
	if msg := k.sandboxFailure(ctx, pod); msg != "" {
		// The kubelet retries the sandbox; the pod stays Pending with its
		// containers ContainerCreating (nothing more is written).
		k.log.Warningf("pod %s/%s: Failed to create pod sandbox: %s (simulated)", pod.Namespace, pod.Name, msg)
		return nil
	}
	ip := k.nodeIP
	if !pod.Spec.HostNetwork {
		var err error
		if ip, err = k.podIP(ctx, pod); err != nil {
			// As the kubelet reports it: the sandbox is retried, the pod
			// stays Pending.
			k.log.Warningf("pod %s/%s: Failed to create pod sandbox: %v (simulated)", pod.Namespace, pod.Name, err)
			return err
		}
	}
	if st, retry, failed := k.pullImages(ctx, pod); failed {
		if err := k.reportPullFailure(ctx, pod, st); err != nil {
			return err
		}
		return retry
	}
	p := pod.DeepCopy()
	p.Status = k.runningStatus(pod, ip)
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	k.log.Infof("pod %s/%s Running (simulated: no containers were started)", pod.Namespace, pod.Name)
	return nil
}

// reportPullFailure records that an image of the pod cannot be pulled on
// this host (once: an unchanged status is not written again).
func (k *kubelet) reportPullFailure(ctx context.Context, pod *corev1.Pod, st corev1.PodStatus) error {
	if pod.Status.Phase == corev1.PodPending && equalWaiting(pod.Status.ContainerStatuses, st.ContainerStatuses) {
		return nil
	}
	p := pod.DeepCopy()
	p.Status = st
	if _, err := k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	for _, cs := range st.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
			k.log.Warningf("pod %s/%s container %s: %s (simulated)", pod.Namespace, pod.Name, cs.Name, w.Message)
		}
	}
	return nil
}

// equalWaiting reports whether two lists of container statuses wait for the
// same reasons.
func equalWaiting(a, b []corev1.ContainerStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		wa, wb := a[i].State.Waiting, b[i].State.Waiting
		if (wa == nil) != (wb == nil) || (wa != nil && (wa.Reason != wb.Reason || wa.Message != wb.Message)) {
			return false
		}
	}
	return true
}

// sandboxFailure says why the pod's sandbox cannot be created ("" when it
// can): the kubelet looks its RuntimeClass up and asks containerd for that
// handler, and containerd refuses a handler it is not configured with
// ("no runtime for %q is configured").
func (k *kubelet) sandboxFailure(ctx context.Context, pod *corev1.Pod) string {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return ""
	}
	rc, err := k.client.NodeV1().RuntimeClasses().Get(ctx, *name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("RuntimeClass %q not found", *name)
	case err != nil:
		return fmt.Sprintf("looking up RuntimeClass %q: %v", *name, err)
	case rc.Handler != RuntimeHandler:
		return fmt.Sprintf("rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for %q is configured", rc.Handler)
	}
	return ""
}

// admit returns why the kubelet would reject the pod on this Windows node.
func (k *kubelet) admit(pod *corev1.Pod) (reason, message string) {
	if pod.Spec.OS != nil && pod.Spec.OS.Name != corev1.Windows {
		return "PodOSNotSupported", "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"
	}
	labels := k.labels()
	for key, v := range pod.Spec.NodeSelector {
		if labels[key] != v {
			return "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
		}
	}
	return "", ""
}

// runningStatus is the status of a pod whose containers run, with its
// address (the node's for hostNetwork pods).
func (k *kubelet) runningStatus(pod *corev1.Pod, ip string) corev1.PodStatus {
	now := metav1.Now()
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodRunning
	st.HostIP = k.nodeIP
	st.HostIPs = []corev1.HostIP{{IP: k.nodeIP}}
	st.PodIP = ip
	st.PodIPs = []corev1.PodIP{{IP: ip}}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	if st.QOSClass == "" {
		st.QOSClass = corev1.PodQOSBestEffort
	}
	st.Conditions = nil
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	id := func(name string) string {
		sum := sha256.Sum256([]byte(string(pod.UID) + "/" + name))
		return fmt.Sprintf("containerd://%x", sum)
	}
	image := func(img string) string {
		sum := sha256.Sum256([]byte(img))
		return fmt.Sprintf("%s@sha256:%x", img, sum)
	}
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: image(c.Image), ContainerID: id(c.Name), Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now, ContainerID: id(c.Name)}},
		})
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: image(c.Image), ContainerID: id(c.Name),
			Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return st
}
