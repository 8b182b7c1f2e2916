package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// simulatedPayload builds a payload folder of the project's Linux builds.
func simulatedPayload(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "payload")
	if _, err := simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t),
		AgentBinary:   testenv.Binary(t, "cmd/winnode-agent"),
		ServiceBinary: testenv.Binary(t, "cmd/winnode-service"),
		StandinBinary: testenv.Binary(t, "cmd/winsim-standin"),
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serviceNames lists the services of a simulated host.
func serviceNames(h *winsim.Host) []string {
	var names []string
	for _, s := range h.Services().List() {
		names = append(names, strings.ToLower(s.Name))
	}
	sort.Strings(names)
	return names
}

// TestAddThenRemove joins a simulated host with winnodectl add and no
// operator running, adds it again (nothing moves), then removes it.
func TestAddThenRemove(t *testing.T) {
	cl := getCluster(t)
	h, payloadDir, keyFile := hostToAdd(t)
	kc := cl.env.KubeconfigPath
	port := strconv.Itoa(h.Port())
	nodeName := strings.ToLower(h.Hostname())
	kube, err := kubernetes.NewForConfig(cl.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	r := run(t, "", "add", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "5m")
	if r.code != ExitOK {
		t.Fatalf("add: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	t.Logf("winnodectl add:\n%s", r.out)
	for _, step := range []string{"connect", "info", "credentials", "plan", "sync", "apply", "join", "finish"} {
		if !strings.Contains(r.out, "✓ "+step) {
			t.Errorf("add did not report step %s:\n%s", step, r.out)
		}
	}
	for _, want := range []string{"approved CSR", "Node " + nodeName + " is Ready"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("add's output lacks %q:\n%s", want, r.out)
		}
	}

	node, err := kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("add reported Ready but Node %s: %v", nodeName, err)
	}
	if view.NodeReady(node) != "Ready" {
		t.Errorf("Node %s is %s", nodeName, view.NodeReady(node))
	}
	if _, ok := node.Labels["node-role.kubernetes.io/worker"]; !ok {
		t.Errorf("Node %s lacks the worker label: %v", nodeName, node.Labels)
	}
	if got, want := node.Annotations[winnodev1.AnnotationHostKey], strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.HostKey()))); got != want {
		t.Errorf("host key annotation %q, want the host's key %q", got, want)
	}
	if node.Annotations[winnodev1.AnnotationVersion] != Version {
		t.Errorf("version annotation %q, want %q", node.Annotations[winnodev1.AnnotationVersion], Version)
	}
	hasTaint := false
	for _, taint := range node.Spec.Taints {
		hasTaint = hasTaint || (taint.Key == "os" && taint.Value == "Windows" && taint.Effect == corev1.TaintEffectNoSchedule)
	}
	if !hasTaint {
		t.Errorf("Node %s lacks the taint os=Windows:NoSchedule: %v", nodeName, node.Spec.Taints)
	}
	servicesAfterAdd := serviceNames(h)
	for _, svc := range []string{"kubelet", plan.WindowsExporterService, plan.CSIProxyService} {
		if !slices.Contains(servicesAfterAdd, svc) {
			t.Errorf("no %s service on the host after add: %v", svc, servicesAfterAdd)
		}
	}
	checkAddedNodeMetrics(t, kube, h, nodeName)
	// Logged under C:\var\log\<service>, rotated at add's limits (here
	// the defaults), as on the operator's hosts.
	for _, svc := range []string{plan.WindowsExporterService, plan.CSIProxyService} {
		cfg, err := h.Services().Get(svc)
		rotation := wincmd.Join("--log-file-size", logrotate.FormatSize(logrotate.Defaults.Size), "--log-file-age", logrotate.Defaults.Age.String())
		if err != nil || !strings.Contains(cfg.Config.BinaryPathName, rotation) || !strings.Contains(cfg.Config.BinaryPathName, wincmd.Quote(plan.LogFile(svc))) {
			t.Errorf("service %s (%v) does not log to %s rotated at add's limits: %s", svc, err, plan.LogFile(svc), cfg.Config.BinaryPathName)
		}
	}

	// status lists the node of winnodectl add.
	r = run(t, "", "status", "--kubeconfig", kc)
	if r.code != ExitOK || !strings.Contains(r.out, "added with winnodectl add") || !strings.Contains(r.out, nodeName) {
		t.Errorf("status after add: exit %d\n%s%s", r.code, r.out, r.err)
	}
	// ssh finds it by node name and checks the pinned key.
	r = run(t, "", "ssh", "--kubeconfig", kc, "--ssh-key", keyFile, "--port", port, nodeName, "--", managedContainerd, "--version")
	if r.code != 0 || !strings.Contains(r.out, "containerd") {
		t.Errorf("ssh to the added node: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}

	// Again: the host is configured; nothing is uploaded or applied (the
	// agent, kept secured in C:\k since its first run, is not sent again).
	before := h.Counters()
	r = run(t, "", "add", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "5m")
	if r.code != ExitOK {
		t.Fatalf("add again: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	for _, step := range []string{"sync", "apply", "uploaded"} {
		if strings.Contains(r.out, step) {
			t.Errorf("add on a configured host did %s:\n%s", step, r.out)
		}
	}
	if in := h.Counters().Sub(before).BytesIn; in > 1<<20 {
		t.Errorf("add on a configured host sent it %d bytes", in)
	}

	// upgrade to another payload: only what changed moves, the node is
	// Ready again.
	payload2 := filepath.Join(t.TempDir(), "payload")
	if _, err := simpayload.Build(payload2, simpayload.Options{Cache: testenv.PayloadCache(t),
		AgentBinary: testenv.Binary(t, "cmd/winnode-agent"), ServiceBinary: testenv.Binary(t, "cmd/winnode-service"), StandinBinary: testenv.Binary(t, "cmd/winsim-standin"),
		PaddingBytes: 1 << 20, PaddingSeed: "v2",
	}); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "upgrade", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payload2, "--timeout", "5m")
	if r.code != ExitOK {
		t.Fatalf("upgrade: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	t.Logf("winnodectl upgrade:\n%s", r.out)
	for _, want := range []string{"Upgrading", "✓ sync", "✓ apply", "Node " + nodeName + " is Ready"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("upgrade's output lacks %q:\n%s", want, r.out)
		}
	}
	if !strings.Contains(r.out, "uploaded 1.0 MiB") { // the new padding file and the plan, not the 60 MiB payload
		t.Errorf("upgrade did not upload just what changed:\n%s", r.out)
	}
	node, err = kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil || view.NodeReady(node) != "Ready" {
		t.Errorf("Node %s after upgrade: %v, %v", nodeName, err, node.Status.Conditions)
	}
	// upgrade to a new kubelet: services restart, so the node is drained
	// first (its pod evicted), and uncordoned once Ready again.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "iis-" + nodeName, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeName:    nodeName,
			Tolerations: []corev1.Toleration{{Key: "os", Value: "Windows", Effect: corev1.TaintEffectNoSchedule}},
			Containers:  []corev1.Container{{Name: "iis", Image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}},
		},
	}
	if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	payload3 := filepath.Join(t.TempDir(), "payload")
	if _, err := simpayload.Build(payload3, simpayload.Options{Cache: testenv.PayloadCache(t),
		AgentBinary: testenv.Binary(t, "cmd/winnode-agent"), ServiceBinary: testenv.Binary(t, "cmd/winnode-service"), StandinBinary: testenv.Binary(t, "cmd/winsim-standin"),
		PaddingBytes: 1 << 20, PaddingSeed: "v2", Build: "v3",
	}); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "upgrade", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payload3, "--timeout", "5m")
	if r.code != ExitOK {
		t.Fatalf("upgrade to a new kubelet: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	t.Logf("winnodectl upgrade to a new kubelet:\n%s", r.out)
	for _, want := range []string{"✓ drain", "✓ apply", "kubelet", "Node " + nodeName + " is Ready"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the output of an upgrade that restarts the kubelet lacks %q:\n%s", want, r.out)
		}
	}
	if _, err := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod was not evicted before the kubelet restarted: %v", err)
	}
	if node, err = kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err != nil || node.Spec.Unschedulable {
		t.Errorf("Node %s after an upgrade that drained it: %v, unschedulable %v", nodeName, err, node.Spec.Unschedulable)
	}

	if r := run(t, "", "upgrade", "192.0.2.99", "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payload2); r.code != ExitFailed || !strings.Contains(r.err, "use add") {
		t.Errorf("upgrade of a host never added: exit %d, stderr %q", r.code, r.err)
	}

	// remove: drained, cleaned, gone.
	r = run(t, "", "remove", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--timeout", "3m")
	if r.code != ExitOK {
		t.Fatalf("remove: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	t.Logf("winnodectl remove:\n%s", r.out)
	for _, step := range []string{"drain", "remove", "delete-node"} {
		if !strings.Contains(r.out, "✓ "+step) {
			t.Errorf("remove did not report step %s:\n%s", step, r.out)
		}
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s after remove: %v, want NotFound", nodeName, err)
	}
	if got := serviceNames(h); slices.Contains(got, "kubelet") || slices.Contains(got, "kube-proxy") {
		t.Errorf("services left on the host after remove: %v", got)
	}
	if slices.Contains(serviceNames(h), "containerd") {
		t.Errorf("remove left the containerd winnode installed: %v", serviceNames(h))
	}
	var secrets corev1.SecretList
	if err := cl.c.List(ctx, &secrets, client.InNamespace("kube-system")); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Type == corev1.SecretTypeBootstrapToken && s.Labels[winnodev1.LabelInstance] != "" && strings.HasPrefix(s.Labels[winnodev1.LabelInstance], strings.ReplaceAll(h.IP(), ".", "-")) {
			t.Errorf("bootstrap token %s of the host is left after remove", s.Name)
		}
	}

	if sec, err := kube.CoreV1().Secrets(joinNamespace).Get(ctx, metricstls.ServingSecretName, metav1.GetOptions{}); err != nil || sec.Data[nodeName+".crt"] != nil || sec.Data[nodeName+".key"] != nil {
		t.Errorf("Secret %s/%s after remove (%v): still holds node %s's windows_exporter certificate", joinNamespace, metricstls.ServingSecretName, err, nodeName)
	}

	// remove again: nothing left to remove, said plainly.
	r = run(t, "", "remove", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc)
	if r.code != ExitFailed || !strings.Contains(r.err, "no Node has the name or address") {
		t.Errorf("remove of a removed host: exit %d, stderr %q", r.code, r.err)
	}
}

func TestAddRefusals(t *testing.T) {
	cl := getCluster(t)
	h, _, pemKey := simHost(t)
	payloadDir := simulatedPayload(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, pemKey, 0o600)
	kc := cl.env.KubeconfigPath
	port := strconv.Itoa(h.Port())

	// A key the host does not accept: stops at connect, says so.
	_, _, otherPEM := simHost(t)
	otherKey := filepath.Join(dir, "other")
	os.WriteFile(otherKey, otherPEM, 0o600)
	r := run(t, "", "add", h.IP(), "--port", port, "--ssh-key", otherKey, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "1m")
	if r.code != ExitFailed || !strings.Contains(r.out, "✗ connect") || !strings.Contains(r.err, "run add again") {
		t.Errorf("a refused key: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}

	// A host without a container runtime, told to rely on its own
	// (--container-runtime existing): stops at info, says what to do.
	bare, err := winsim.New(winsim.Options{StateDir: t.TempDir()}) // no containerd
	if err != nil {
		t.Fatal(err)
	}
	if err := bare.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Close() })
	signer, err := ssh.ParsePrivateKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := bare.AuthorizeKey(signer.PublicKey()); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "add", bare.IP(), "--port", strconv.Itoa(bare.Port()), "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "1m",
		"--container-runtime", "existing")
	if r.code != ExitFailed || !strings.Contains(r.out, "✗ info") || !strings.Contains(r.err, "containerd service is not installed") {
		t.Errorf("a host without containerd: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}

	// A host whose key changed after add: refused, with what to do.
	h2, _, _ := simHost(t)
	h2.AuthorizeKey(signer.PublicKey())
	h2port := strconv.Itoa(h2.Port())
	r = run(t, "", "add", h2.IP(), "--port", h2port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "3m")
	if r.code != ExitOK {
		t.Fatalf("add: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if _, err := h2.RotateHostKey(); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "add", h2.IP(), "--port", h2port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "1m")
	if r.code != ExitFailed || !strings.Contains(r.err, "--host-key SHA256:") || !strings.Contains(r.out, "✗ connect") {
		t.Errorf("a changed host key: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	// ssh refuses it too.
	r = run(t, "", "ssh", "--kubeconfig", kc, "--ssh-key", keyFile, "--port", h2port, h2.IP(), "--", managedContainerd, "--version")
	if r.code != ExitSSHFailed || !strings.Contains(r.err, "presented host key") {
		t.Errorf("ssh to a host with a changed key: exit %d, stderr %q", r.code, r.err)
	}
	// Naming the new fingerprint accepts it, and it is pinned instead.
	r = run(t, "", "add", h2.IP(), "--port", h2port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "1m", "--host-key", h2.Fingerprint())
	if r.code != ExitOK {
		t.Errorf("add --host-key with the new fingerprint: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	kube := kubernetes.NewForConfigOrDie(cl.env.Config)
	if got, _ := readPin(context.Background(), kube, strings.ToLower(h2.Hostname())); got != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h2.HostKey()))) {
		t.Errorf("pin after accepting the new key: %q", got)
	}
	cleanupNode(t, cl, strings.ToLower(h2.Hostname()))

	// A host the operator manages is not added behind its back.
	cl.instance(t, builder.Instance("managed-"+strings.ReplaceAll(h.IP(), ".", "-")).Host(h.IP(), "Administrator").Port(int32(h.Port())).
		Phase(winnodev1.PhasePending))
	r = run(t, "", "add", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir)
	if r.code != ExitFailed || !strings.Contains(r.err, "which the operator manages") {
		t.Errorf("a managed host: exit %d, stderr %q", r.code, r.err)
	}

	// Wrong input: exit 2, nothing done.
	for _, args := range [][]string{
		{"add", "not a host!", "--ssh-key", keyFile},
		{"add", h.IP(), "--ssh-key", keyFile, "--user", "bad user"},
		{"add", h.IP(), "--ssh-key", keyFile, "--port", "70000"},
		{"add", h.IP()},
		{"remove"},
	} {
		if r := run(t, "", args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %q", args, r.code, ExitUsage, r.err)
		}
	}
	// Addresses that are not a Windows host's, refused before anything is
	// done unless --allow-addresses permits them.
	for _, address := range []string{h.IP(), "169.254.169.254", "10.96.0.1", "kubernetes.default.svc", "api.default.svc.cluster.local", "localhost"} {
		r := run(t, "", "add", address, "--ssh-key", keyFile, "--kubeconfig", kc, "--payload-dir", payloadDir)
		if r.code != ExitUsage || !strings.Contains(r.err, "--allow-addresses") {
			t.Errorf("add %s: exit %d, want %d naming --allow-addresses; stderr %q", address, r.code, ExitUsage, r.err)
		}
	}
	// A payload folder that is not one.
	r = run(t, "", "add", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", dir)
	if r.code != ExitFailed || !strings.Contains(r.err, "--payload-dir") {
		t.Errorf("no payload: exit %d, stderr %q", r.code, r.err)
	}
}

// cleanupNode deletes a Node a test made (the shared cluster outlives it).
func cleanupNode(t *testing.T, cl cluster, name string) {
	t.Helper()
	node := &corev1.Node{}
	node.Name = name
	if err := cl.c.Delete(context.Background(), node); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting Node %s: %v", name, err)
	}
}

// hostToAdd starts a simulated host and returns it with a simulated
// payload folder and the file of the private key it accepts.
func hostToAdd(t *testing.T) (h *winsim.Host, payloadDir, keyFile string) {
	t.Helper()
	h, _, pemKey := simHost(t)
	keyFile = filepath.Join(t.TempDir(), "winnode-key")
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return h, simulatedPayload(t), keyFile
}

// TestRemoveUnreachableHost: a host that is gone is left alone with a
// warning, and its Node is removed all the same.
func TestRemoveUnreachableHost(t *testing.T) {
	cl := getCluster(t)
	h, payloadDir, keyFile := hostToAdd(t)
	kc := cl.env.KubeconfigPath
	port := strconv.Itoa(h.Port())
	nodeName := strings.ToLower(h.Hostname())

	r := run(t, "", "add", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "3m")
	if r.code != ExitOK {
		t.Fatalf("add: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if err := h.Close(); err != nil { // the host is gone
		t.Fatal(err)
	}
	r = run(t, "", "remove", nodeName, "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--timeout", "2m")
	if r.code != ExitOK {
		t.Fatalf("remove of a gone host: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.out, "warning") {
		t.Errorf("remove did not warn that the host was left alone:\n%s", r.out)
	}
	node := &corev1.Node{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Name: nodeName}, node); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s after remove: %v, want NotFound", nodeName, err)
	}
}

// TestAddOnPlainCluster: add, status, ssh and remove on a cluster where
// winnode was never installed (no WindowsInstance API), the case add is for.
func TestAddOnPlainCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane of its own")
	}
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{CRDDirectoryPaths: []string{}}) // no CRDs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	h, payloadDir, keyFile := hostToAdd(t)
	kc := env.KubeconfigPath
	port := strconv.Itoa(h.Port())
	nodeName := strings.ToLower(h.Hostname())

	r := run(t, "", "add", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "3m")
	if r.code != ExitOK {
		t.Fatalf("add: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	r = run(t, "", "status", "--kubeconfig", kc)
	if r.code != ExitOK || !strings.Contains(r.out, nodeName) || !strings.Contains(r.err, "does not know WindowsInstances") {
		t.Errorf("status: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	r = run(t, "", "ssh", "--kubeconfig", kc, "--ssh-key", keyFile, "--port", port, nodeName, "--", managedContainerd, "--version")
	if r.code != 0 || !strings.Contains(r.out, "containerd") {
		t.Errorf("ssh: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	r = run(t, "", "remove", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--timeout", "2m")
	if r.code != ExitOK {
		t.Fatalf("remove: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if got := serviceNames(h); slices.Contains(got, "kubelet") {
		t.Errorf("services left on the host after remove: %v", got)
	}
}

// TestAddInterrupted: SIGINT (a cancelled context) ends add with 130 and
// does nothing more.
func TestAddInterrupted(t *testing.T) {
	cl := getCluster(t)
	h, payloadDir, keyFile := hostToAdd(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut strings.Builder
	code := Execute(ctx, []string{"add", h.IP(), "--port", strconv.Itoa(h.Port()), "--ssh-key", keyFile, "--allow-addresses", simHosts,
		"--kubeconfig", cl.env.KubeconfigPath, "--payload-dir", payloadDir}, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitInterrupted, out.String(), errOut.String())
	}
	if got := serviceNames(h); slices.Contains(got, "kubelet") {
		t.Errorf("an interrupted add installed services: %v", got)
	}
}

// TestAddHostKeyPinnedBeforeFirstContact: with --host-key, a host that
// presents another key is refused at the first connection, naming both
// fingerprints, and nothing is installed; with its real fingerprint, it
// joins.
func TestAddHostKeyPinnedBeforeFirstContact(t *testing.T) {
	cl := getCluster(t)
	h, _, pemKey := simHost(t)
	payloadDir := simulatedPayload(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"add", h.IP(), "--port", strconv.Itoa(h.Port()), "--ssh-key", keyFile, "--allow-addresses", simHosts,
		"--kubeconfig", cl.env.KubeconfigPath, "--payload-dir", payloadDir, "--timeout", "2m"}

	wrong := ssh.FingerprintSHA256(fixture.NewKey(t).Signer.PublicKey())
	r := run(t, "", append(args, "--host-key", wrong)...)
	if r.code != ExitFailed || !strings.Contains(r.err, wrong) || !strings.Contains(r.err, h.Fingerprint()) || !strings.Contains(r.err, "nothing was done") {
		t.Errorf("a host with another key: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if agent, err := h.Path(`C:\k\winnode-agent.exe`); err != nil {
		t.Fatal(err)
	} else if _, err := os.Stat(agent); err == nil {
		t.Errorf("the agent was copied to a host whose key did not match --host-key")
	}
	r = run(t, "", append(args, "--host-key", "SHA256:not-a-fingerprint")...)
	if r.code != ExitUsage || !strings.Contains(r.err, "SHA256:not-a-fingerprint") {
		t.Errorf("a malformed --host-key: exit %d, stderr %q", r.code, r.err)
	}
	r = run(t, "", append(args, "--host-key", h.Fingerprint())...)
	if r.code != ExitOK {
		t.Fatalf("the right --host-key: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
}

// managedContainerd is where the containerd winnode installs runs
// (winnodectl add's default, --container-runtime managed).
const managedContainerd = simpayload.ContainerdHostPath

// checkAddedNodeMetrics: the windows_exporter of a node added without the
// operator serves its metrics over TLS with a certificate for the node's
// address that verifies against the CA add published in ConfigMap
// kube-system/windows-exporter-ca, and a client without that CA is refused.
func checkAddedNodeMetrics(t *testing.T, kube kubernetes.Interface, h *winsim.Host, nodeName string) {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(joinNamespace).Get(context.Background(), metricstls.CAConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the CA winnodectl add publishes: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data[metricstls.CAKey])) {
		t.Fatalf("ConfigMap %s/%s has no CA certificate under %s", joinNamespace, cm.Name, metricstls.CAKey)
	}
	url := "https://" + net.JoinHostPort(h.IP(), strconv.Itoa(plan.WindowsExporterPort)) + "/metrics"
	get := func(pool *x509.CertPool) (string, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
		}
		if err == nil && resp.TLS.PeerCertificates[0].VerifyHostname(h.IP()) != nil {
			err = fmt.Errorf("the certificate names %v %v, not %s", resp.TLS.PeerCertificates[0].DNSNames, resp.TLS.PeerCertificates[0].IPAddresses, h.IP())
		}
		return string(body), err
	}
	var body string
	testkit.Eventually(t, time.Minute, "windows_exporter's metrics at "+url, func() (bool, string) {
		body, err = get(pool)
		return err == nil, fmt.Sprint(err)
	})
	if !strings.Contains(body, "windows_cs_logical_processors ") {
		t.Errorf("node %s's metrics lack windows_cs_logical_processors:\n%.500s", nodeName, body)
	}
	if _, err := get(x509.NewCertPool()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the CA: %v, want a certificate error", err)
	}
}
