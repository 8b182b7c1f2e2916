package standin

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// imageBuilds maps the tags Microsoft publishes its Windows base images
// under (mcr.microsoft.com/windows/servercore, nanoserver, ...) to the
// Windows build they are made from. A process-isolated Windows container
// must be of the host's build (Microsoft's "Windows container version
// compatibility" page): a Windows Server 2019 host (10.0.17763) runs
// ltsc2019/1809 images only, a 2022 host ltsc2022 ones.
var imageBuilds = map[string]string{
	"ltsc2019": "10.0.17763",
	"1809":     "10.0.17763",
	"ltsc2022": "10.0.20348",
	"ltsc2025": "10.0.26100",
}

// imageBuild is the Windows build an image reference's tag names ("" when
// the tag names none of the well-known ones: such images run anywhere
// here). "servercore:ltsc2022", "iis:windowsservercore-ltsc2019" and
// "nanoserver:1809-amd64" all name theirs.
func imageBuild(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return "" // no tag (a registry's port is before the last slash)
	}
	for _, word := range strings.FieldsFunc(strings.ToLower(ref[colon+1:]), func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if b, ok := imageBuilds[word]; ok {
			return b
		}
	}
	return ""
}

// imageMismatch says why an image cannot run on a host of build hostBuild
// ("" when it can). containerd on Windows fails the pull of a
// multi-platform tag that has no image of the host's build ("no match for
// platform in manifest"); the message also says which builds differ, in the
// words Docker uses for the same refusal.
func imageMismatch(image, hostBuild string) string {
	b := imageBuild(image)
	if b == "" || b == hostBuild {
		return ""
	}
	return fmt.Sprintf("Failed to pull image %q: rpc error: code = NotFound desc = failed to pull and unpack image %q: no match for platform in manifest: not found (a Windows version %s-based image is incompatible with a %s host)",
		image, image, b, hostBuild)
}

// Image pulls, as the kubelet's image manager does them
// (pkg/kubelet/images): each container's image is pulled through the
// container runtime (containerd's PullImage: pull.go resolves it through
// the registry's hosts.toml and the proxy); a failed pull leaves the
// container waiting with ErrImagePull and "Failed to pull image ..." and
// the runtime's error, then ImagePullBackOff ("Back-off pulling image
// ...") until the back-off (10 s, doubling up to 5 minutes, as the
// kubelet's) lets it try again.
const (
	pullBackOffInitial = 10 * time.Second
	pullBackOffMax     = 5 * time.Minute
)

// pullBackOff is when a pod's images may be pulled again, and how long it
// waits next time.
type pullBackOff struct {
	next  time.Time
	delay time.Duration
}

// retryAfter asks the pod worker to sync the pod again after d.
type retryAfter struct{ d time.Duration }

func (r *retryAfter) Error() string { return fmt.Sprintf("retry after %s", r.d) }

// pullImages pulls the pod's images. It returns false when every one is
// there; else the status to report and when to try again.
func (k *kubelet) pullImages(ctx context.Context, pod *corev1.Pod) (corev1.PodStatus, *retryAfter, bool) {
	if b, ok := k.pullBackOffs[pod.UID]; ok && time.Now().Before(b.next) {
		// Backing off: ErrImagePull becomes ImagePullBackOff.
		st := *pod.Status.DeepCopy()
		backOff(st.InitContainerStatuses)
		backOff(st.ContainerStatuses)
		return st, &retryAfter{time.Until(b.next)}, true
	}
	failed := false
	waiting := func(c corev1.Container) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
		msg := imageMismatch(c.Image, k.host.Build)
		if msg == "" {
			if err := k.ctd.pull(ctx, c.Image); err != nil {
				msg = fmt.Sprintf("Failed to pull image %q: %v", c.Image, err)
			}
		}
		if msg != "" {
			failed = true
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: msg}
		}
		return cs
	}
	st := *pod.Status.DeepCopy()
	st.InitContainerStatuses, st.ContainerStatuses = nil, nil
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, waiting(c))
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, waiting(c))
	}
	if !failed {
		delete(k.pullBackOffs, pod.UID)
		return corev1.PodStatus{}, nil, false
	}
	b := k.pullBackOffs[pod.UID]
	b.delay = min(max(2*b.delay, pullBackOffInitial), pullBackOffMax)
	b.next = time.Now().Add(b.delay)
	k.pullBackOffs[pod.UID] = b
	k.pendingStatus(&st)
	return st, &retryAfter{b.delay}, true
}

// backOff turns each ErrImagePull into ImagePullBackOff.
func backOff(statuses []corev1.ContainerStatus) {
	for i := range statuses {
		if w := statuses[i].State.Waiting; w != nil && w.Reason == "ErrImagePull" {
			statuses[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", statuses[i].Image, w.Message)}
		}
	}
}

// pendingStatus makes st the status of a Pending pod whose containers wait.
func (k *kubelet) pendingStatus(st *corev1.PodStatus) {
	now := metav1.Now()
	st.Phase = corev1.PodPending
	st.HostIP, st.HostIPs = k.nodeIP, []corev1.HostIP{{IP: k.nodeIP}}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: now},
	}
}
