package standin

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Heartbeat timing, as the kubelet's defaults.
const (
	leaseDuration    = 40 * time.Second
	heartbeatPeriod  = 10 * time.Second // lease renewal and node status check
	statusReportFreq = time.Minute      // a status update even when nothing changed
)

// ubr is the update build revision reported in kernelVersion, per build.
var ubr = map[string]string{"10.0.17763": "6414", "10.0.20348": "2849"}

// runNode registers the Node, then keeps its lease and status fresh and
// serves its pods until ctx ends. Stopping ends the heartbeat, so the node
// lifecycle controller marks the node NotReady.
func (k *kubelet) runNode(ctx context.Context) error {
	port, err := k.serveAPI(ctx)
	if err != nil {
		return err
	}
	k.apiPort = port
	if err := k.registerNode(ctx); err != nil {
		return err
	}
	if err := k.updateStatus(ctx); err != nil {
		k.log.Warningf("updating node status: %v", err)
	}
	lastReport := time.Now()
	go k.fastStatusUpdateOnce(ctx)
	if k.config.ServerTLSBootstrap {
		go k.requestServingCert(ctx)
	}
	go k.runPods(ctx)
	tick := time.NewTicker(heartbeatPeriod)
	defer tick.Stop()
	k.renewLease(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		k.renewLease(ctx)
		if needs, err := k.statusNeedsUpdate(ctx); err != nil || needs || time.Since(lastReport) >= statusReportFreq {
			if err := k.updateStatus(ctx); err != nil {
				k.log.Warningf("updating node status: %v", err)
				continue
			}
			lastReport = time.Now()
		}
	}
}

// fastStatusUpdateOnce copies the kubelet's start-up status update
// (pkg/kubelet/kubelet.go fastStatusUpdateOnce, kubernetes PR #112618,
// since v1.27): until the node is first Ready, it checks every 100 ms
// whether the runtime's network is ready and, as soon as it is, posts the
// status at once rather than at the next 10 s heartbeat; it gives up after
// the kubelet's nodeReadyGracePeriod of two minutes.
func (k *kubelet) fastStatusUpdateOnce(ctx context.Context) {
	const fastPeriod, nodeReadyGracePeriod = 100 * time.Millisecond, 2 * time.Minute
	tick := time.NewTicker(fastPeriod)
	defer tick.Stop()
	deadline := time.Now().Add(nodeReadyGracePeriod)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := k.networkStatus(); err != nil {
			continue
		}
		if needs, err := k.statusNeedsUpdate(ctx); err != nil || !needs {
			return
		}
		if err := k.updateStatus(ctx); err != nil {
			k.log.Warningf("updating node status: %v", err)
			continue
		}
		return
	}
}

func (k *kubelet) labels() map[string]string {
	l := map[string]string{
		corev1.LabelOSStable:      "windows",
		corev1.LabelArchStable:    "amd64",
		"beta.kubernetes.io/os":   "windows",
		"beta.kubernetes.io/arch": "amd64",
		corev1.LabelHostname:      k.nodeName,
		corev1.LabelWindowsBuild:  k.host.Build,
	}
	for key, v := range k.flags.nodeLabels {
		l[key] = v
	}
	return l
}

// registerNode creates the Node, retrying until the API server takes it;
// an existing Node gets the kubelet's labels brought up to date. The Node
// is created with the kubelet's status, its Ready condition included, as
// the kubelet's initialNode does (pkg/kubelet/kubelet_node_status.go calls
// setNodeStatus before registering): a node whose network is not ready is
// NotReady from its first version.
func (k *kubelet) registerNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   k.nodeName,
			Labels: k.labels(),
			Annotations: map[string]string{
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec:   corev1.NodeSpec{Taints: k.taints, ProviderID: k.config.ProviderID},
		Status: k.status(corev1.NodeStatus{}),
	}
	for {
		_, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err == nil {
			k.log.Infof("successfully registered node %s", k.nodeName)
			return nil
		}
		if apierrors.IsAlreadyExists(err) {
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				existing, err := k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if existing.Labels == nil {
					existing.Labels = map[string]string{}
				}
				for key, v := range k.labels() {
					existing.Labels[key] = v
				}
				_, err = k.client.CoreV1().Nodes().Update(ctx, existing, metav1.UpdateOptions{})
				return err
			})
			if err == nil {
				k.log.Infof("node %s was already registered", k.nodeName)
				return nil
			}
		}
		k.log.Warningf("unable to register node %s with the API server: %v", k.nodeName, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(7 * time.Second):
		}
	}
}

// status is the NodeStatus the kubelet reports, given the previous one (to
// keep transition times).
func (k *kubelet) status(prev corev1.NodeStatus) corev1.NodeStatus {
	now := metav1.Now()
	pods := k.config.MaxPods
	if pods == 0 {
		pods = 110
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("2"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, p := range prev.Conditions {
			if p.Type == t && p.Status == s {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		return c
	}
	id := sha256.Sum256([]byte(k.host.Hostname + "/" + k.host.FQDN))
	uuid := fmt.Sprintf("%X-%X-%X-%X-%X", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
	st := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: k.allocatable(capacity),
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			k.readyCondition(cond),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.nodeIP},
			{Type: corev1.NodeHostName, Address: k.nodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: k.apiPort}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               fmt.Sprintf("%x", id[:16]),
			SystemUUID:              uuid,
			BootID:                  k.host.BootTime.UTC().Format(time.RFC3339),
			KernelVersion:           k.host.Build + "." + ubr[k.host.Build],
			OSImage:                 k.host.ProductName,
			ContainerRuntimeVersion: "containerd://" + ContainerdVersion,
			KubeletVersion:          k.version,
			OperatingSystem:         "windows",
			Architecture:            "amd64",
		},
	}
	return st
}

// allocatable is the capacity less systemReserved and kubeReserved from the
// configuration, as the kubelet computes it.
func (k *kubelet) allocatable(capacity corev1.ResourceList) corev1.ResourceList {
	out := capacity.DeepCopy()
	for _, reserved := range []map[string]string{k.config.SystemReserved, k.config.KubeReserved} {
		for name, v := range reserved {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				continue
			}
			if have, ok := out[corev1.ResourceName(name)]; ok {
				have.Sub(q)
				if have.Sign() < 0 {
					have = resource.Quantity{}
				}
				out[corev1.ResourceName(name)] = have
			}
		}
	}
	return out
}

// readyCondition is the kubelet's Ready condition: True once the container
// runtime reports its network ready (cni.go), else False with the message
// the real kubelet posts ("container runtime network not ready: ..."; the
// kubelet's runtime-state check, pkg/kubelet/runtime.go).
func (k *kubelet) readyCondition(cond func(corev1.NodeConditionType, corev1.ConditionStatus, string, string) corev1.NodeCondition) corev1.NodeCondition {
	if _, err := k.networkStatus(); err != nil {
		k.networkNotReady(err)
		return cond(corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady", networkNotReadyMessage)
	}
	if k.networkErr != "" {
		k.log.Infof("container runtime network ready (simulated: CNI configuration loaded, HNS network present)")
		k.networkErr = ""
	}
	return cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status (simulated by winsim)")
}

// networkNotReady logs why the network is not ready, once per cause, as
// containerd logs "failed to load cni during init" and the kubelet its
// runtime-state error.
func (k *kubelet) networkNotReady(err error) {
	if err.Error() == k.networkErr {
		return
	}
	k.networkErr = err.Error()
	k.log.Errorf("%s (simulated: %v)", networkNotReadyMessage, err)
}

// statusNeedsUpdate says whether the Node's Ready condition is not what this
// kubelet reports (after a restart, after the node lifecycle controller
// marked it Unknown, or when the runtime's network became ready or not).
func (k *kubelet) statusNeedsUpdate(ctx context.Context) (bool, error) {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	_, netErr := k.networkStatus()
	want := corev1.ConditionTrue
	if netErr != nil {
		want = corev1.ConditionFalse
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != want || (want == corev1.ConditionTrue && c.Reason != "KubeletReady"), nil
		}
	}
	return true, nil
}

func (k *kubelet) updateStatus(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status = k.status(node.Status)
		_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if err == nil {
			k.log.V(2, "node status updated: Ready=%s", readyStatus(node.Status))
		}
		return err
	})
}

// renewLease renews the node's Lease in kube-node-lease, creating it on
// first use.
func (k *kubelet) renewLease(ctx context.Context) {
	leases := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, k.nodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		node, nerr := k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.nodeName, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.nodeName),
				LeaseDurationSeconds: ptr.To(int32(leaseDuration.Seconds())),
				RenewTime:            &now,
			},
		}
		if nerr == nil {
			lease.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: types.UID(node.UID),
			}}
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	case err == nil:
		lease.Spec.RenewTime = &now
		lease.Spec.HolderIdentity = ptr.To(k.nodeName)
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(leaseDuration.Seconds()))
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil && ctx.Err() == nil {
		k.log.Warningf("failed to renew lease kube-node-lease/%s: %v", k.nodeName, err)
	}
}

func readyStatus(st corev1.NodeStatus) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
