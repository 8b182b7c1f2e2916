package e2e

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/registries"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// registry is an HTTP endpoint a test runs for the stand-in containerd to
// reach for real (a mirror, a proxy): it has every manifest and records
// each request's URL.
type registry struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRegistry(t testing.TB) *registry {
	r := &registry{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.String())
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
	}))
	t.Cleanup(r.Close)
	return r
}

// saw says whether a request's URL held s.
func (r *registry) saw(s string) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.seen, func(u string) bool { return strings.Contains(u, s) }), strings.Join(r.seen, "; ")
}

// runImage runs a pod with image on node and waits until it is Running.
func (w *world) runImage(t testing.TB, node, name, image string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: "os", Value: "Windows", Effect: corev1.TaintEffectNoSchedule}},
			Containers:  []corev1.Container{{Name: "app", Image: image}},
		},
	}
	if _, err := w.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.kube.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	testkit.Eventually(t, time.Minute, "pod "+name+" Running", func() (bool, string) {
		p, err := w.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("%s %v", p.Status.Phase, p.Status.ContainerStatuses)
	})
}

// bootTime is when the host last started.
func bootTime(t testing.TB, h *winsim.Host) time.Time {
	t.Helper()
	info, err := h.SCM().Host(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.BootTime
}

func servicePID(t testing.TB, h *winsim.Host, name string) int {
	t.Helper()
	s, err := h.Services().Get(name)
	if err != nil {
		t.Fatalf("service %s on %s: %v", name, h.Hostname(), err)
	}
	return s.Status.PID
}

// A windows-registries ConfigMap (Kubernetes) reaches a Ready host with no
// restart of the host or of containerd, and the next pull of an image of
// that registry goes to its mirror.
func TestRegistryMirrorReachesHostsWithoutRestarts(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "mirrored", h)
	inst := w.waitReady(t, "mirrored", 3*time.Minute)
	waitStableServices(t, h)
	boot, containerd := bootTime(t, h), servicePID(t, h, "containerd")

	mirror := newRegistry(t)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: registries.ConfigMapName, Namespace: Namespace},
		Data: map[string]string{
			"registry.example.com": fmt.Sprintf("server = \"https://registry.example.com\"\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", mirror.URL),
			// Not a hosts.toml: left out with an event, the rest applies.
			"quay.io": "server = 1",
		},
	}
	if _, err := w.kube.CoreV1().ConfigMaps(Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.kube.CoreV1().ConfigMaps(Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	hostsToml := plan.RegistryDir + `\registry.example.com\hosts.toml`
	testkit.Eventually(t, 2*time.Minute, hostsToml+" on the host", func() (bool, string) {
		cur := w.get(t, "mirrored")
		return hostFileExists(t, h, hostsToml) && cur.Status.Phase == winnodev1.PhaseReady,
			fmt.Sprintf("phase %s lastError %q", cur.Status.Phase, cur.Status.LastError)
	})
	w.waitEvents(t, "default", "mirrored", "RegistriesInvalid")
	if !bootTime(t, h).Equal(boot) {
		t.Error("the host restarted for a registry change")
	}
	if pid := servicePID(t, h, "containerd"); pid != containerd {
		t.Errorf("containerd restarted (pid %d, was %d) for a registry change", pid, containerd)
	}
	w.runImage(t, inst.Status.NodeName, "from-mirror", "registry.example.com/team/app:1")
	if ok, seen := mirror.saw("/v2/team/app/manifests/1?ns=registry.example.com"); !ok {
		t.Errorf("the pull did not go to the mirror; it saw: %s", seen)
	}
}

// A cluster-wide proxy (here the operator's own HTTP_PROXY, as on
// Kubernetes) reaches a Ready host by restarting its services with the
// proxy in their environment, not by restarting the host; the next pull
// goes through the proxy, and the node's own address is in NO_PROXY.
func TestProxyChangeRestartsServicesNotTheHost(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "proxied", h)
	inst := w.waitReady(t, "proxied", 3*time.Minute)
	waitStableServices(t, h)
	boot, containerd := bootTime(t, h), servicePID(t, h, "containerd")
	op.stop()

	proxy := newRegistry(t)
	w.startOperator(t, operatorOptions{proxy: plan.ProxyFacts{HTTPProxy: proxy.URL, HTTPSProxy: proxy.URL, NoProxy: ".cluster.local"}})
	testkit.Eventually(t, 3*time.Minute, "containerd restarted with the proxy in its environment", func() (bool, string) {
		s, err := h.Services().Get("containerd")
		cur := w.get(t, "proxied")
		return err == nil && slices.Contains(s.Config.Environment, "HTTPS_PROXY="+proxy.URL) && s.Status.PID != containerd && cur.Status.Phase == winnodev1.PhaseReady,
			fmt.Sprintf("environment %v pid %d phase %s lastError %q", s.Config.Environment, s.Status.PID, cur.Status.Phase, cur.Status.LastError)
	})
	if !bootTime(t, h).Equal(boot) {
		t.Error("the host restarted for a proxy change")
	}
	s, _ := h.Services().Get("kubelet")
	noProxy := ""
	for _, e := range s.Config.Environment {
		if v, ok := strings.CutPrefix(e, "NO_PROXY="); ok {
			noProxy = v
		}
	}
	if !strings.Contains(noProxy, h.IP()) || !strings.Contains(noProxy, ".cluster.local") {
		t.Errorf("the kubelet's NO_PROXY %q lacks the node's address %s or the cluster's list", noProxy, h.IP())
	}
	w.runImage(t, inst.Status.NodeName, "through-proxy", "registry.example.com/team/app:2")
	if ok, seen := proxy.saw("http://registry.example.com/v2/team/app/manifests/2"); !ok {
		t.Errorf("the pull did not go through the proxy; it saw: %s", seen)
	}
}

// The proxy's CA bundle (on Kubernetes the ConfigMap --trusted-ca-configmap
// names) goes into the machine's Root store, and only what winnode added
// leaves it when the host is deconfigured; Defender gets process
// exclusions for winnode's programs only on a host where it runs.
func TestTrustedCAAndDefenderExclusions(t *testing.T) {
	w := getWorld(t)
	certPEM, _, err := certutil.GenerateSelfSignedCertKey("proxy-ca.example.com", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	sum := sha1.Sum(block.Bytes)
	thumbprint := hex.EncodeToString(sum[:])
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proxy-ca", Namespace: Namespace}, Data: map[string]string{"ca-bundle.crt": string(certPEM)}}
	if _, err := w.kube.CoreV1().ConfigMaps(Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.kube.CoreV1().ConfigMaps(Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})

	defended := w.newHostTuned(t, true, func(o *winsim.Options) { o.Defender = true })
	plain := w.newHost(t)
	w.startOperator(t, operatorOptions{trustedCA: cm.Name})
	w.instanceFor(t, "defended", defended)
	w.instanceFor(t, "plain", plain)
	inst := w.waitReady(t, "defended", 3*time.Minute)
	w.waitReady(t, "plain", 3*time.Minute)
	for _, h := range []*winsim.Host{defended, plain} {
		if !slices.Contains(h.RootCertificates(), thumbprint) {
			t.Errorf("host %s: the proxy's CA %s is not in LocalMachine\\Root: %v", h.Hostname(), thumbprint, h.RootCertificates())
		}
	}
	if ex := defended.DefenderExclusions(); !slices.ContainsFunc(ex, func(p string) bool { return strings.EqualFold(p, simpayload.ContainerdHostPath) }) {
		t.Errorf("Defender exclusions %v lack %s", ex, simpayload.ContainerdHostPath)
	}
	if ex := plain.DefenderExclusions(); len(ex) != 0 {
		t.Errorf("Defender exclusions %v on a host where Defender does not run", ex)
	}

	if err := w.client.Delete(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, "defended", 2*time.Minute)
	if roots := defended.RootCertificates(); slices.Contains(roots, thumbprint) {
		t.Errorf("the proxy's CA is still in LocalMachine\\Root after deconfiguration: %v", roots)
	}
}
