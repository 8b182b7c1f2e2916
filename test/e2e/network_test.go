package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/config"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simhns"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// The message the kubelet posts while containerd has no pod network.
const networkNotReady = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"

// watchNetworkNotReady records whether the host's Node was ever seen
// NotReady for want of a pod network, until the test ends.
func (w *world) watchNetworkNotReady(t *testing.T, h *winsim.Host) func() bool {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	seen := make(chan struct{})
	notReady := func(n *corev1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, networkNotReady) {
				return true
			}
		}
		return false
	}
	// A watch (client-go's, which lists again when its watch expires), not
	// polling: the kubelet may be NotReady for less time than any poll
	// interval, and a watch sees every status it posts.
	name := strings.ToLower(h.Hostname())
	lw := cache.NewFilteredListWatchFromClient(w.kube.CoreV1().RESTClient(), "nodes", "",
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name })
	go func() {
		_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
			n, ok := ev.Object.(*corev1.Node)
			return ok && notReady(n), nil
		})
		if err == nil {
			close(seen)
		}
	}()
	return func() bool {
		select {
		case <-seen:
			return true
		default:
			return false
		}
	}
}

// In a cluster that runs flannel (the test world's ConfigMap), a host's
// node is NotReady until flanneld created its network and winnode wrote
// the CNI configuration for the node's subnet; then pods run there with
// addresses of that subnet, a Linux Deployment never lands there, and a
// deleted CNI configuration is put back.
func TestFlannelNetwork(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	sawNotReady := w.watchNetworkNotReady(t, h)
	countApplies, applies := appliesOf("flannel-net")
	w.startOperator(t, operatorOptions{crash: countApplies})
	w.instanceFor(t, "flannel-net", h)
	inst := w.waitReady(t, "flannel-net", 3*time.Minute)
	if !sawNotReady() {
		t.Error("the node was never NotReady for want of a pod network: was it Ready before winnode set up the network?")
	}
	if n := applies(); n != 1 {
		t.Errorf("the first configuration applied a plan %d times, want once: the host writes what depends on the pod subnet itself", n)
	}
	node, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	subnet := netip.MustParsePrefix(node.Spec.PodCIDR)
	if inst.Status.Network != plan.NetworkFlannel || inst.Status.PodCIDR != node.Spec.PodCIDR {
		t.Errorf("status network %q podCIDR %q, want flannel and the Node's %s", inst.Status.Network, inst.Status.PodCIDR, node.Spec.PodCIDR)
	}
	w.waitEvents(t, metav1.NamespaceDefault, "flannel-net", "NetworkMode")
	checkFlannelHost(t, h, subnet)

	t.Run("pods run with addresses of the node's subnet", func(t *testing.T) { w.checkWebServerPods(t, subnet) })
	t.Run("a deleted CNI configuration is put back", func(t *testing.T) {
		conf, _ := h.Path(plan.CNIConfPath)
		if err := os.Remove(conf); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, time.Minute, "the node NotReady without its CNI configuration", func() (bool, string) {
			n, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
			return err == nil && nodeReadyStatus(n) == corev1.ConditionFalse, fmt.Sprint(err)
		})
		w.waitReady(t, "flannel-net", 3*time.Minute)
		testkit.Eventually(t, 2*time.Minute, "the CNI configuration back and the node Ready", func() (bool, string) {
			n, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
			_, statErr := os.Stat(conf)
			return err == nil && statErr == nil && nodeReadyStatus(n) == corev1.ConditionTrue, fmt.Sprint(err, statErr)
		})
	})
}

// appliesOf counts the apply steps the operator runs for instance name: a
// Crash hook that never stops it, and the count so far.
func appliesOf(name string) (func(*operator, *winnodev1.WindowsInstance, string) error, func() int) {
	var n atomic.Int32
	hook := func(_ *operator, inst *winnodev1.WindowsInstance, step string) error {
		if inst.Name == name && step == configure.StepApply {
			n.Add(1)
		}
		return nil
	}
	return hook, func() int { return int(n.Load()) }
}

func nodeReadyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// checkFlannelHost: flanneld's HNS network on the node's subnet, winnode's
// CNI configuration for it, kube-proxy on the overlay.
func checkFlannelHost(t *testing.T, h *winsim.Host, subnet netip.Prefix) {
	t.Helper()
	n, err := h.HNS().Network("vxlan0")
	if err != nil || n.Type != simhns.TypeOverlay || len(n.Subnets) != 1 || n.Subnets[0].AddressPrefix != subnet.String() || n.VNI != 4096 {
		t.Errorf("HNS network vxlan0: %+v, %v; want an Overlay network on %s, VNI 4096", n, err, subnet)
	}
	conf, _ := h.Path(plan.CNIConfPath)
	data, err := os.ReadFile(conf)
	if err != nil || !bytes.Contains(data, []byte(`"subnet": "`+subnet.String()+`"`)) || !bytes.Contains(data, []byte(`"type": "win-overlay"`)) {
		t.Errorf("%s: %v\n%s", plan.CNIConfPath, err, data)
	}
	_, vip, _ := plan.SubnetAddresses(subnet)
	checkProxyOverlay(t, h, "vxlan0", vip)
}

// checkProxyOverlay: the kube-proxy service runs with its configuration
// file, and that file puts it on the overlay network with the source VIP.
func checkProxyOverlay(t *testing.T, h *winsim.Host, network string, vip netip.Addr) *simscm.Service {
	t.Helper()
	svc, err := h.SCM().Get(context.Background(), plan.KubeProxyService)
	if err != nil || !strings.HasSuffix(svc.Config.BinaryPathName, `C:\k\kube-proxy.exe --config=`+plan.KubeProxyConfigPath) {
		t.Errorf("kube-proxy: %v %s", err, svc.Config.BinaryPathName)
	}
	var c kubeproxyv1alpha1.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict(hostFile(t, h, plan.KubeProxyConfigPath), &c); err != nil ||
		c.Winkernel.NetworkName != network || c.Winkernel.SourceVip != vip.String() || c.Mode != "kernelspace" {
		t.Errorf("%s: %+v, %v; want kernelspace on %s with source VIP %s", plan.KubeProxyConfigPath, c, err, network, vip)
	}
	return &svc
}

// checkWebServerPods deploys config/samples/windows-web-server.yaml and a
// Linux Deployment: the web server's pods run on the Windows node with
// distinct addresses of its subnet; the Linux pods never land there.
func (w *world) checkWebServerPods(t *testing.T, subnet netip.Prefix) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "workloads-"}}
	if err := w.client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.client.Delete(context.Background(), ns) })
	var web appsv1.Deployment
	var svc corev1.Service
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(config.WindowsWebServer), 4096)
	if err := dec.Decode(&web); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&svc); err != nil {
		t.Fatal(err)
	}
	web.Namespace, svc.Namespace = ns.Name, ns.Name
	linux := linuxDeployment(ns.Name)
	for _, o := range []client.Object{&web, &svc, linux} {
		if err := w.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var pods corev1.PodList
	testkit.Eventually(t, 2*time.Minute, "the web server's 2 pods Running", func() (bool, string) {
		if err := w.client.List(ctx, &pods, client.InNamespace(ns.Name), client.MatchingLabels{"app": "win-webserver"}); err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, podSummary(pods.Items)
	})
	ips := map[string]bool{}
	for _, p := range pods.Items {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !subnet.Contains(ip) || ips[p.Status.PodIP] {
			t.Errorf("pod %s has address %q, want a distinct address of the node's subnet %s", p.Name, p.Status.PodIP, subnet)
		}
		ips[p.Status.PodIP] = true
	}
	var linuxPods corev1.PodList
	if err := w.client.List(ctx, &linuxPods, client.InNamespace(ns.Name), client.MatchingLabels{"app": "linux-web"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range linuxPods.Items {
		if p.Spec.NodeName != "" {
			t.Errorf("Linux pod %s was scheduled onto %s", p.Name, p.Spec.NodeName)
		}
	}
	if len(linuxPods.Items) == 0 {
		t.Error("the Linux Deployment made no pods")
	}
}

// linuxDeployment is a plain Linux web server, with no toleration of the
// Windows taint.
func linuxDeployment(ns string) *appsv1.Deployment {
	sel := map[string]string{"app": "linux-web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "linux-web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
					Containers:   []corev1.Container{{Name: "web", Image: "registry.k8s.io/e2e-test-images/agnhost:2.52"}},
				},
			},
		},
	}
}

func podSummary(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "%s on %q: %s %s; ", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
	}
	return b.String()
}

// With --network external winnode installs the kubelet only; the node
// turns Ready when the cluster's own CNI (played here by the test) writes
// its configuration and network.
func TestExternalNetwork(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	sawNotReady := w.watchNetworkNotReady(t, h)
	w.startOperator(t, operatorOptions{network: plan.NetworkExternal})
	w.instanceFor(t, "external-net", h)
	testkit.Eventually(t, 3*time.Minute, "the node registered and NotReady for want of a network", func() (bool, string) {
		inst := w.get(t, "external-net")
		return sawNotReady() && inst.Status.Network == plan.NetworkExternal, inst.Status.Step
	})
	for _, svc := range []string{plan.KubeProxyService, plan.FlanneldService} {
		if _, err := h.SCM().Get(context.Background(), svc); err == nil {
			t.Errorf("--network external installed %s", svc)
		}
	}
	playClusterCNI(t, h, "calico", "192.168.5.0/24")
	w.waitReady(t, "external-net", 3*time.Minute)
}

// playClusterCNI does on a host what a cluster's own Windows CNI DaemonSet
// does (--network external): winsim's SimulateClusterCNI.
func playClusterCNI(t *testing.T, h *winsim.Host, name, subnet string) {
	t.Helper()
	if err := h.SimulateClusterCNI(name, subnet); err != nil {
		t.Fatal(err)
	}
}

// ovn-hybrid needs hybrid-overlay-node.exe, which a payload built without
// it as an input file lacks: refused, saying what is missing, and nothing
// installed.
func TestOVNHybridRefusedWithoutItsProgram(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{network: plan.NetworkOVNHybrid})
	w.instanceFor(t, "ovn-net", h)
	testkit.Eventually(t, 2*time.Minute, "condition NetworkUnsupported naming hybrid-overlay-node.exe", func() (bool, string) {
		inst := w.get(t, "ovn-net")
		for _, c := range inst.Status.Conditions {
			if c.Type == winnodev1.ConditionNetworkUnsupported && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "hybrid-overlay-node.exe") {
				return true, ""
			}
		}
		return false, conditionSummary(inst.Status.Conditions)
	})
	if _, err := h.SCM().Get(context.Background(), plan.KubeletService); err == nil {
		t.Error("a kubelet was installed although the network mode was refused")
	}
}

// In an OVN-Kubernetes cluster with the hybrid overlay (its cluster-side
// controller played by testenv's simulated one), with a payload that has
// hybrid-overlay-node.exe: the node is NotReady until hybrid-overlay-node
// created its network on the subnet the controller gave the Node and
// winnode wrote the CNI configuration for it; then pods run there with
// addresses of that subnet, from the real host-local plugin.
func TestOVNHybridNetwork(t *testing.T) {
	w := getWorld(t)
	const hybridCIDR = "10.132.0.0/14"
	logs := newTestWriter(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := testenv.StartHybridOverlayMaster(ctx, w.env.Config, hybridCIDR, logs); err != nil {
		t.Fatal(err)
	}
	hostLocal, err := testenv.HostLocal()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest, err := simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t), AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, HostLocalBinary: hostLocal, HybridOverlay: true})
	if err != nil {
		t.Fatal(err)
	}
	h := w.newHost(t)
	sawNotReady := w.watchNetworkNotReady(t, h)
	countApplies, applies := appliesOf("ovn-hybrid-net")
	w.startOperator(t, operatorOptions{network: plan.NetworkOVNHybrid, hybridClusterCIDR: hybridCIDR, payloadDir: dir, payload: manifest, crash: countApplies})
	w.instanceFor(t, "ovn-hybrid-net", h)
	inst := w.waitReady(t, "ovn-hybrid-net", 3*time.Minute)
	if !sawNotReady() {
		t.Error("the node was never NotReady for want of a pod network: was it Ready before winnode set up the network?")
	}
	if n := applies(); n != 1 {
		t.Errorf("the first configuration applied a plan %d times, want once: the host writes what depends on the hybrid subnet itself", n)
	}
	node, err := w.kube.CoreV1().Nodes().Get(context.Background(), inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	subnet, err := netip.ParsePrefix(node.Annotations[plan.HybridOverlaySubnetAnnotation])
	if err != nil || !netip.MustParsePrefix(hybridCIDR).Contains(subnet.Addr()) {
		t.Fatalf("Node %s's hybrid subnet %q (%v), want one of %s", node.Name, node.Annotations[plan.HybridOverlaySubnetAnnotation], err, hybridCIDR)
	}
	if inst.Status.Network != plan.NetworkOVNHybrid || inst.Status.PodCIDR != subnet.String() {
		t.Errorf("status network %q podCIDR %q, want ovn-hybrid and the Node's hybrid subnet %s", inst.Status.Network, inst.Status.PodCIDR, subnet)
	}
	w.waitEvents(t, metav1.NamespaceDefault, "ovn-hybrid-net", "NetworkMode")
	checkHybridOverlayHost(t, h, node, subnet)
	t.Run("pods run with addresses of the node's hybrid subnet", func(t *testing.T) { w.checkWebServerPods(t, subnet) })
}

// checkHybridOverlayHost: hybrid-overlay-node's HNS networks, its
// annotation on the Node, winnode's CNI configuration, kube-proxy on the
// hybrid overlay after hybrid-overlay-node.
func checkHybridOverlayHost(t *testing.T, h *winsim.Host, node *corev1.Node, subnet netip.Prefix) {
	t.Helper()
	n, err := h.HNS().Network(plan.HybridOverlayNetwork)
	if err != nil || n.Type != simhns.TypeOverlay || len(n.Subnets) != 1 || n.Subnets[0].AddressPrefix != subnet.String() || n.VNI != 4097 {
		t.Errorf("HNS network %s: %+v, %v; want an Overlay network on %s, VNI 4097", plan.HybridOverlayNetwork, n, err, subnet)
	}
	if _, err := h.HNS().Network("BaseOVNKubernetesHybridOverlayNetwork"); err != nil {
		t.Errorf("the base network: %v", err)
	}
	if mac := node.Annotations[plan.HybridOverlayDRMACAnnotation]; mac == "" || mac != n.DRMacAddress {
		t.Errorf("Node annotation %s = %q, want the network's distributed router MAC %q", plan.HybridOverlayDRMACAnnotation, mac, n.DRMacAddress)
	}
	conf, _ := h.Path(plan.CNIConfPath)
	data, err := os.ReadFile(conf)
	if err != nil || !bytes.Contains(data, []byte(`"subnet": "`+subnet.String()+`"`)) || !bytes.Contains(data, []byte(`"name": "OVNKubernetesHybridOverlayNetwork"`)) {
		t.Errorf("%s: %v\n%s", plan.CNIConfPath, err, data)
	}
	_, vip, _ := plan.SubnetAddresses(subnet)
	proxy := checkProxyOverlay(t, h, "OVNKubernetesHybridOverlayNetwork", vip)
	if !slices.Contains(proxy.Config.Dependencies, plan.HybridOverlayService) {
		t.Errorf("kube-proxy runs after %v, want after %s", proxy.Config.Dependencies, plan.HybridOverlayService)
	}
	ho, err := h.SCM().Get(context.Background(), plan.HybridOverlayService)
	if err != nil || !strings.Contains(ho.Config.BinaryPathName, "--node "+node.Name) || !slices.Contains(ho.Config.Dependencies, plan.KubeletService) {
		t.Errorf("hybrid-overlay-node: %v %s after %v", err, ho.Config.BinaryPathName, ho.Config.Dependencies)
	}
	// It exits at its start without its kubeconfig or its Node, which its
	// service waits for first (pod-network --wait-only): it never failed.
	if err == nil && ho.Status.Failures > 0 {
		log, _ := h.Path(plan.LogFile(plan.HybridOverlayService))
		text, _ := os.ReadFile(log)
		t.Errorf("hybrid-overlay-node failed %d times before it ran; its service's log:\n%s", ho.Status.Failures, text)
	}
}

// An ltsc2022 image does not run on a Windows Server 2019 node; the
// RuntimeClass windows-2022 places the same pod on a 2022 node.
func TestImageOfAnotherWindowsRelease(t *testing.T) {
	w := getWorld(t)
	h2019, h2022 := w.newHost(t), w.newHostOf(t, true, "", "2022")
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "release-2019", h2019)
	w.instanceFor(t, "release-2022", h2022)
	i2019 := w.waitReady(t, "release-2019", 3*time.Minute)
	i2022 := w.waitReady(t, "release-2022", 3*time.Minute)
	ctx := context.Background()
	image := "mcr.microsoft.com/windows/servercore:ltsc2022"
	pinned := iisPod("on-2019", image)
	pinned.Spec.NodeName = i2019.Status.NodeName
	placed := iisPod("by-runtimeclass", image)
	placed.Spec.RuntimeClassName = ptr.To("windows-2022")
	for _, p := range []*corev1.Pod{pinned, placed} {
		if err := w.client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.client.Delete(context.Background(), p) })
	}
	testkit.Eventually(t, 2*time.Minute, "ErrImagePull on the 2019 node, Running on the 2022 node", func() (bool, string) {
		var a, b corev1.Pod
		_ = w.client.Get(ctx, client.ObjectKeyFromObject(pinned), &a)
		_ = w.client.Get(ctx, client.ObjectKeyFromObject(placed), &b)
		pulled := false
		for _, cs := range a.Status.ContainerStatuses {
			if wt := cs.State.Waiting; wt != nil && (wt.Reason == "ErrImagePull" || wt.Reason == "ImagePullBackOff") && strings.Contains(wt.Message, "a Windows version 10.0.20348-based image is incompatible with a 10.0.17763 host") {
				pulled = true
			}
		}
		return pulled && b.Status.Phase == corev1.PodRunning && b.Spec.NodeName == i2022.Status.NodeName, podSummary([]corev1.Pod{a, b})
	})
}

func iisPod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Key: "os", Value: "Windows", Effect: corev1.TaintEffectNoSchedule}},
			Containers:  []corev1.Container{{Name: "iis", Image: image}},
		},
	}
}
