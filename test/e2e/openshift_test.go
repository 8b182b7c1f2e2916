package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	configv1 "github.com/openshift/api/config/v1"
	"github.com/winnode/winnode/internal/simscm"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// BYOH on the openshift flavor of the test world, the operator on
// --platform=auto:
//   - it finds OpenShift (config.openshift.io is served) and takes the
//     cluster facts from the platform's objects: the host's bootstrap
//     kubeconfig names Infrastructure's apiServerInternalURI (not the
//     admin address; there is no kube-public/cluster-info to read), its
//     kubelet CA is the ControllerConfig's, its cluster DNS the rendered
//     worker's; the host becomes a Ready node joined with a ServiceAccount
//     token;
//   - a newer rendered worker MachineConfig changes the plan, which reaches
//     the host through the ordinary upgrade (Ready → Upgrading → Ready);
//   - so does a new kubelet CA in the ControllerConfig;
//   - its windows_exporter serves the certificate OpenShift's service CA
//     issued for the Service windows-exporter (checkServiceCAServing);
//   - a real Prometheus with the scrape configuration of
//     config/prometheus-openshift's ServiceMonitor scrapes it, verifying
//     with the service CA, before and after a rotation of the service CA
//     (checkServiceCAScrapes);
//   - no bootstrap-token Secret is created anywhere, at any time.
func TestOpenShiftBYOH(t *testing.T) {
	w := getWorldOf(t, kindOpenShift)
	ocp := w.env.OpenShift
	tokens := w.watchBootstrapTokenSecrets(t)
	pr := w.recordPhases(t)
	h := w.newHost(t)
	sawNotReady := w.watchNetworkNotReady(t, h)
	w.startOperator(t, operatorOptions{})
	name := inventory.InstanceName(h.IP())
	t.Cleanup(func() {
		_ = w.kube.CoreV1().ConfigMaps(Namespace).Delete(context.Background(), inventory.InstancesConfigMap, metav1.DeleteOptions{})
		w.forget(name)
	})
	w.setEntries(t, map[string]string{h.IP(): entry(h)})

	// OpenShift's pod network for Windows nodes (OVN-Kubernetes' hybrid
	// overlay) is not one winnode sets up yet: auto chooses external, and
	// the node turns Ready once the cluster's CNI, played here by the test,
	// has configured the host.
	testkit.Eventually(t, 3*time.Minute, "the node registered and NotReady for want of a network", func() (bool, string) {
		inst := &winnodev1.WindowsInstance{}
		if err := w.client.Get(context.Background(), client.ObjectKey{Name: name}, inst); err != nil {
			return false, err.Error()
		}
		return sawNotReady() && inst.Status.Network == plan.NetworkExternal, inst.Status.Step
	})
	playClusterCNI(t, h, "OVNKubernetesHybridOverlayNetwork", "10.244.7.0/24")
	inst := w.waitReady(t, name, 3*time.Minute)
	w.checkNode(t, inst, h)
	if server := hostKubeconfigServer(t, h); server != ocp.InternalURL {
		t.Errorf("the host's bootstrap kubeconfig names %s, want Infrastructure cluster's apiServerInternalURI %s (the admin address is %s)", server, ocp.InternalURL, w.env.Host)
	}
	ca, err := os.ReadFile(w.env.CACertFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := hostFile(t, h, plan.KubeletCAPath); !bytes.Equal(got, ca) {
		t.Errorf("%s is not the ControllerConfig's kubelet CA", plan.KubeletCAPath)
	}
	checkKubeletDNS(t, h, ocp.ClusterDNS)
	t.Run("exporter certificate from the service CA", func(t *testing.T) { w.checkServiceCAServing(t, h, pr, name) })
	t.Run("Prometheus scrapes with the service CA, rotated", func(t *testing.T) { w.checkServiceCAScrapes(t, h, pr, name) })
	facts := w.eventMessages(t, metav1.NamespaceDefault, name, configure.EventReasonClusterFacts)
	if len(facts) == 0 || !strings.Contains(facts[0], "platform openshift (the API group config.openshift.io is served") || !strings.Contains(facts[0], "MachineConfig "+ocp.RenderedWorker) {
		t.Errorf("ClusterFacts events %q do not say platform openshift, why, and MachineConfig %s", facts, ocp.RenderedWorker)
	}
	w.checkServiceAccountJoin(t, name)

	t.Run("newer rendered worker config", func(t *testing.T) {
		before := planVersion(w.get(t, name))
		mc, err := ocp.RenderWorker(context.Background(), testenv.RenderedWorkerOptions{ClusterDNS: "10.96.0.11"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ocp.DeleteRenderedWorker(context.Background(), mc) })
		after := w.waitPlanChanged(t, pr, name, before)
		checkKubeletDNS(t, h, "10.96.0.11")
		t.Logf("MachineConfig %s: plan %s -> %s", mc, before, after)
		// Deleted here, not only at cleanup, and waited for: the plan going
		// back to the older rendered worker is a change the next subtest
		// would otherwise take for its own.
		if err := ocp.DeleteRenderedWorker(context.Background(), mc); err != nil {
			t.Fatal(err)
		}
		if back := w.waitPlanChanged(t, pr, name, after); back != before {
			t.Errorf("MachineConfig %s deleted: plan %s, want the plan of the older rendered worker %s", mc, back, before)
		}
	})

	t.Run("new kubelet CA", func(t *testing.T) {
		before := planVersion(w.get(t, name))
		bundle := append(append([]byte{}, ca...), newCA(t)...)
		if err := ocp.SetKubeletCA(context.Background(), bundle); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ocp.SetKubeletCA(context.Background(), ca) })
		after := w.waitPlanChanged(t, pr, name, before)
		if got := hostFile(t, h, plan.KubeletCAPath); !bytes.Equal(got, bundle) {
			t.Errorf("%s is not the rotated kubelet CA bundle", plan.KubeletCAPath)
		}
		t.Logf("kubelet CA rotated: plan %s -> %s", before, after)
	})

	t.Run("image digest mirror set", func(t *testing.T) { testImageDigestMirrorSet(t, w, h) })

	if got := tokens.added(); len(got) > 0 {
		t.Errorf("bootstrap-token Secrets were created on the openshift flavor: %v", got)
	}
}

// waitPlanChanged waits until the instance is Ready again with a plan other
// than before, having gone through Upgrading, and returns the new plan.
func (w *world) waitPlanChanged(t *testing.T, pr *phaseRecorder, name, before string) string {
	t.Helper()
	var after string
	testkit.Eventually(t, 3*time.Minute, "a new plan on "+name, func() (bool, string) {
		inst := w.get(t, name)
		after = planVersion(inst)
		return inst.Status.Phase == winnodev1.PhaseReady && after != before, fmt.Sprintf("phase %s plan %s lastError %q", inst.Status.Phase, after, inst.Status.LastError)
	})
	phases := pr.waitEndsWith(t, name, winnodev1.PhaseUpgrading, winnodev1.PhaseReady)
	t.Logf("phases of %s: %v", name, phases)
	return after
}

// planVersion is the version of the plan the instance's host runs, from its
// Configured condition ("plan <version> applied").
func planVersion(inst *winnodev1.WindowsInstance) string {
	c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionConfigured)
	if c == nil || c.Reason != winnodev1.ReasonPlanApplied {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(c.Message, "plan "), " applied")
}

// checkServiceAccountJoin checks that the instance was given only
// ServiceAccount tokens, and that they are gone now that it joined.
func (w *world) checkServiceAccountJoin(t *testing.T, name string) {
	t.Helper()
	issued := w.eventMessages(t, metav1.NamespaceDefault, name, "JoinCredentials")
	if len(issued) == 0 {
		t.Errorf("no JoinCredentials event for %s", name)
	}
	for _, m := range issued {
		if !strings.HasPrefix(m, "issued a token of ServiceAccount ") || !strings.Contains(m, "platform openshift") {
			t.Errorf("join credentials of %s: %s (want a ServiceAccount token, because the platform is openshift)", name, m)
		}
	}
}

func hostFile(t *testing.T, h *winsim.Host, path string) []byte {
	t.Helper()
	local, err := h.Path(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatalf("%s on %s: %v", path, h.Hostname(), err)
	}
	return data
}

// hostKubeconfigServer is the server URL of the host's bootstrap kubeconfig.
func hostKubeconfigServer(t *testing.T, h *winsim.Host) string {
	t.Helper()
	cfg, err := clientcmd.Load(hostFile(t, h, plan.BootstrapKubeconfigPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		return c.Server
	}
	t.Fatal("the bootstrap kubeconfig has no cluster")
	return ""
}

func checkKubeletDNS(t *testing.T, h *winsim.Host, dns string) {
	t.Helper()
	if kc := string(hostFile(t, h, plan.KubeletConfigPath)); !strings.Contains(kc, "- "+dns+"\n") {
		t.Errorf("the host's kubelet configuration lacks clusterDNS %s:\n%s", dns, kc)
	}
}

// newCA is a fresh self-signed CA certificate (PEM).
func newCA(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "rotated-kubelet-ca"}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// tokenSecrets records every bootstrap-token Secret created while it
// watches, in every namespace.
type tokenSecrets struct {
	mu    sync.Mutex
	names []string
}

func (ts *tokenSecrets) added() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.names...)
}

// watchBootstrapTokenSecrets watches Secrets of type
// bootstrap.kubernetes.io/token in all namespaces until the test ends.
func (w *world) watchBootstrapTokenSecrets(t *testing.T) *tokenSecrets {
	t.Helper()
	sel := fields.OneTermEqualSelector("type", string(corev1.SecretTypeBootstrapToken)).String()
	wt, err := w.kube.CoreV1().Secrets(metav1.NamespaceAll).Watch(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	ts := &tokenSecrets{}
	go func() {
		for ev := range wt.ResultChan() {
			if s, ok := ev.Object.(*corev1.Secret); ok && ev.Type == watch.Added {
				ts.mu.Lock()
				ts.names = append(ts.names, s.Namespace+"/"+s.Name)
				ts.mu.Unlock()
			}
		}
	}()
	t.Cleanup(wt.Stop)
	return ts
}

// testImageDigestMirrorSet: an ImageDigestMirrorSet reaches the host as
// hosts.toml with no restart of the host or of containerd, and the next
// pull by digest goes to the mirror, under the mirror's organisation path
// (the source's own path, which containerd appends, ends the mirror's).
func testImageDigestMirrorSet(t *testing.T, w *world, h *winsim.Host) {
	boot, containerd := bootTime(t, h), servicePID(t, h, "containerd")
	mirror := newRegistry(t)
	idms := &configv1.ImageDigestMirrorSet{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-mirror"},
		Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{{
			Source:  "registry.example.com/team",
			Mirrors: []configv1.ImageMirror{configv1.ImageMirror(strings.TrimPrefix(mirror.URL, "http://") + "/mirrored/team")},
		}}},
	}
	if err := w.client.Create(context.Background(), idms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.client.Delete(context.Background(), idms) })
	hostsToml := plan.RegistryDir + `\registry.example.com\hosts.toml`
	testkit.Eventually(t, 2*time.Minute, hostsToml+" naming the mirror", func() (bool, string) {
		p, _ := h.Path(hostsToml)
		data, _ := os.ReadFile(p)
		return strings.Contains(string(data), "/v2/mirrored") && strings.Contains(string(data), "override_path = true"), string(data)
	})
	if !bootTime(t, h).Equal(boot) {
		t.Error("the host restarted for a mirror set")
	}
	if pid := servicePID(t, h, "containerd"); pid != containerd {
		t.Errorf("containerd restarted (pid %d, was %d) for a mirror set", pid, containerd)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	// The world's pods get no sandbox (its played cluster CNI has no IPAM):
	// the pull is asked of containerd directly, as the kubelet's CRI does.
	if err := pullOnHost(h, "registry.example.com/team/app@"+digest); err != nil {
		t.Errorf("pulling through the mirror: %v", err)
	}
	if ok, seen := mirror.saw("HEAD /v2/mirrored/team/app/manifests/" + digest); !ok {
		t.Errorf("the pull did not go to the mirror; it saw: %s", seen)
	}
}

// pullOnHost asks the host's containerd to pull image, over its pipe (the
// simulated containerd's API: what the kubelet's PullImage reaches), and
// returns containerd's error.
func pullOnHost(h *winsim.Host, image string) error {
	sock := simscm.PipePath(h.SCMSocket(), plan.ContainerdPipe)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	body, _ := json.Marshal(map[string]string{"image": image})
	resp, err := c.Post("http://containerd/pull", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, msg)
	}
	return nil
}
