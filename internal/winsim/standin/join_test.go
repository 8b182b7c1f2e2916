package standin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/utils/ptr"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simhns"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winsim"
)

// newHost starts a simulated host with containerd (the stand-in) installed
// and the stand-in also placed as C:\k\kubelet.exe.
func newHost(t *testing.T, standin string) (*winsim.Host, fixture.Key) {
	t.Helper()
	h, key := fixture.SimHost(t, winsim.Options{StandinBinary: standin, ForeignContainerd: true, BootDelay: 200 * time.Millisecond})
	kubelet, _ := h.Path(`C:\k\kubelet.exe`)
	data, err := os.ReadFile(standin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(kubelet), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubelet, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return h, key
}

func writeHostFile(t *testing.T, h *winsim.Host, windowsPath string, data []byte) {
	t.Helper()
	p, err := h.Path(windowsPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// kubeletLog is where these tests' kubelets log: they run as services
// with --windows-service and log to standard error, which the simulated
// service control manager keeps in the service's log (winnode's plans run
// the kubelet under run-service instead, which writes C:\var\log\kubelet);
// usingServingCert is what one says when it starts with a serving
// certificate it has (serving.go).
const (
	kubeletLog       = `C:\ProgramData\winsim\logs\kubelet.log`
	usingServingCert = "using the serving certificate in"
)

// heartbeats waits for two renewals of the kubelet's Lease after this
// call. Its heartbeat (node.go, runNode) renews the Lease and then checks
// the node's status, every 10 s: the first renewal seen was written after
// the call, so the status check after it saw what the test changed
// before; the second renewal shows that check is done.
func heartbeats(t *testing.T, admin kubernetes.Interface, nodeName string) {
	t.Helper()
	renewed := func() (string, error) {
		l, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return l.Spec.RenewTime.String(), nil
	}
	last, err := renewed()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	testkit.Eventually(t, time.Minute, "two heartbeats of the kubelet of "+nodeName, func() (bool, string) {
		at, err := renewed()
		if err != nil {
			return false, err.Error()
		}
		if at != last {
			seen, last = seen+1, at
		}
		return seen >= 2, fmt.Sprintf("%d renewals, the last at %s", seen, last)
	})
}

func hostFile(h *winsim.Host, windowsPath string) string {
	p, _ := h.Path(windowsPath)
	data, _ := os.ReadFile(p)
	return string(data)
}

// bootstrapToken creates a bootstrap token that may request kubelet client
// certificates, as kubeadm or winnode's operator would.
func bootstrapToken(t *testing.T, admin kubernetes.Interface) (id, token string) {
	t.Helper()
	ctx := context.Background()
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		t.Fatal(err)
	}
	id, secret, _ := strings.Cut(token, ".")
	_, err = admin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               id,
			bootstrapapi.BootstrapTokenSecretKey:           secret,
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      "system:bootstrappers:winsim-test",
			bootstrapapi.BootstrapTokenExpirationKey:       time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the bootstrap token: %v", err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "winsim-test-node-bootstrapper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:bootstrappers:winsim-test"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return id, token
}

// approve waits for a CSR from user with signer and approves it.
func approve(t *testing.T, admin kubernetes.Interface, signer, user string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	ctx := context.Background()
	var found *certificatesv1.CertificateSigningRequest
	testkit.Eventually(t, 90*time.Second, fmt.Sprintf("a %s CSR from %s", signer, user), func() (bool, string) {
		list, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for i, c := range list.Items {
			seen = append(seen, c.Spec.SignerName+"/"+c.Spec.Username)
			if c.Spec.SignerName == signer && c.Spec.Username == user && len(c.Status.Conditions) == 0 {
				found = &list.Items[i]
				return true, ""
			}
		}
		return false, strings.Join(seen, ", ")
	})
	found.Status.Conditions = append(found.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "WinsimTest", Message: "approved by the winsim test",
	})
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, found.Name, found, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("approving %s: %v", found.Name, err)
	}
	return found
}

func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TestKubeletClockBehind: a kubelet whose host's clock is behind the API
// server certificate's NotBefore fails its TLS bootstrap as a real one
// does (Go's x509 verification at the local time), and asks for nothing.
func TestKubeletClockBehind(t *testing.T) {
	env := testenv.Get(t)
	admin := kubernetes.NewForConfigOrDie(env.Config)
	h, _ := newHost(t, testenv.Binary(t, "cmd/winsim-standin"))
	h.SetClockOffset(-10 * time.Minute) // testenv's certificates are valid from a minute before it started
	_, token := bootstrapToken(t, admin)
	nodeName := strings.ToLower(h.Hostname())
	startKubelet(t, env, h, token, nodeName)
	testkit.Eventually(t, time.Minute, "the kubelet to fail its TLS bootstrap", func() (bool, string) {
		log := hostFile(h, kubeletLog)
		return strings.Contains(log, "x509: certificate has expired or is not yet valid") && strings.Contains(log, "simulated clock"), log
	})
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		if c.Spec.Username == "system:bootstrap:"+strings.SplitN(token, ".", 2)[0] {
			t.Errorf("a kubelet whose clock is behind made CSR %s", c.Name)
		}
	}
}

// startKubelet puts the files the operator would on the host (CA,
// bootstrap kubeconfig, kubelet config), creates the kubelet service
// with the command line winnode gives it, and starts it.
func startKubelet(t *testing.T, env *testenv.Env, h *winsim.Host, token, nodeName string) {
	t.Helper()
	ctx := context.Background()
	// The files the operator would put on the host.
	ca, err := os.ReadFile(env.CACertFile)
	if err != nil {
		t.Fatal(err)
	}
	writeHostFile(t, h, `C:\k\ca.crt`, ca)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: env.Host, CertificateAuthority: `C:\k\ca.crt`}
	kc.AuthInfos["kubelet-bootstrap"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "kubelet-bootstrap"}
	kc.CurrentContext = "c"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	writeHostFile(t, h, `C:\k\bootstrap-kubeconfig`, data)
	writeHostFile(t, h, `C:\k\kubelet.conf`, []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupsPerQOS: false
enforceNodeAllocatable: []
serverTLSBootstrap: true
containerRuntimeEndpoint: npipe://./pipe/containerd-containerd
systemReserved:
  cpu: 500m
  memory: 1Gi
`))
	c := h.SCM()
	err = c.Create(ctx, simscm.Config{
		Name: "kubelet",
		BinaryPathName: wincmd.Join(`C:\k\kubelet.exe`, `--config=C:\k\kubelet.conf`,
			`--bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig`, `--kubeconfig=C:\k\kubeconfig`,
			`--cert-dir=C:\var\lib\kubelet\pki`, "--hostname-override="+nodeName, "--node-ip="+h.IP(),
			"--node-labels=node.kubernetes.io/windows-build="+h.Build()+",example.com/pool=win",
			"--register-with-taints=os=Windows:NoSchedule", "--windows-service", "--v=2"),
		Dependencies:    []string{"containerd"},
		StartType:       plan.StartAuto,
		RecoveryActions: []simscm.Action{{Type: "restart", Delay: time.Second}},
		ResetPeriod:     time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "kubelet"); err != nil {
		t.Fatal(err)
	}
}

func TestKubeletJoinsControlPlane(t *testing.T) {
	env := testenv.Get(t)
	admin := kubernetes.NewForConfigOrDie(env.Config)
	standin := testenv.Binary(t, "cmd/winsim-standin")
	h, _ := newHost(t, standin)
	ctx := context.Background()
	id, token := bootstrapToken(t, admin)
	nodeName := strings.ToLower(h.Hostname())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubelet service log:\n%s", hostFile(h, kubeletLog))
		}
	})

	startKubelet(t, env, h, token, nodeName)
	c := h.SCM()
	// containerd cannot stop under a running kubelet.
	if err := c.Stop(ctx, "containerd"); err == nil || !strings.Contains(err.Error(), "kubelet") {
		t.Errorf("stopping containerd under the kubelet: %v, want ErrDependentRunning", err)
	}

	// TLS bootstrap: the test plays the CSR approver.
	approve(t, admin, certificatesv1.KubeAPIServerClientKubeletSignerName, "system:bootstrap:"+id)
	checkNetworkGate(t, admin, h, nodeName)
	var node *corev1.Node
	testkit.Eventually(t, 180*time.Second, "node "+nodeName+" Ready", func() (bool, string) {
		n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error() + "\nkubelet log:\n" + hostFile(h, `C:\var\log\kubelet\kubelet.log`)
		}
		node = n
		return nodeReady(n) == corev1.ConditionTrue, string(nodeReady(n))
	})
	if !strings.Contains(hostFile(h, `C:\k\kubeconfig`), `C:\var\lib\kubelet\pki\kubelet-client-current.pem`) {
		t.Errorf("the kubeconfig does not use the client certificate by its Windows path:\n%s", hostFile(h, `C:\k\kubeconfig`))
	}
	for k, v := range map[string]string{
		"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": nodeName,
		"node.kubernetes.io/windows-build": "10.0.17763", "example.com/pool": "win",
	} {
		if node.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	// The node lifecycle controller may still hold its own
	// node.kubernetes.io/not-ready taint for a moment; the kubelet's is os.
	var own []corev1.Taint
	for _, tt := range node.Spec.Taints {
		if !strings.HasPrefix(tt.Key, "node.kubernetes.io/") {
			own = append(own, tt)
		}
	}
	if len(own) != 1 || own[0].Key != "os" || own[0].Value != "Windows" || own[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints = %v, want os=Windows:NoSchedule", node.Spec.Taints)
	}
	info := node.Status.NodeInfo
	if info.OperatingSystem != "windows" || info.OSImage != "Windows Server 2019 Datacenter" || !strings.HasPrefix(info.KernelVersion, "10.0.17763.") ||
		!strings.HasPrefix(info.KubeletVersion, "v1.") || !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("nodeInfo = %+v", info)
	}
	if cpu := node.Status.Allocatable.Cpu(); cpu.MilliValue() != node.Status.Capacity.Cpu().MilliValue()-500 {
		t.Errorf("allocatable cpu %s with capacity %s and 500m reserved", cpu, node.Status.Capacity.Cpu())
	}
	addrs := map[corev1.NodeAddressType]string{}
	for _, a := range node.Status.Addresses {
		addrs[a.Type] = a.Address
	}
	if addrs[corev1.NodeInternalIP] != h.IP() || addrs[corev1.NodeHostName] != nodeName {
		t.Errorf("addresses = %v", node.Status.Addresses)
	}
	lease, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil || ptr.Deref(lease.Spec.HolderIdentity, "") != nodeName {
		t.Errorf("lease: %+v, %v", lease, err)
	}

	// serverTLSBootstrap: a serving CSR from the node itself.
	approve(t, admin, certificatesv1.KubeletServingSignerName, "system:node:"+nodeName)
	testkit.Eventually(t, 60*time.Second, "the serving certificate on the host", func() (bool, string) {
		return strings.Contains(hostFile(h, `C:\var\lib\kubelet\pki\kubelet-server-current.pem`), "BEGIN CERTIFICATE"), ""
	})

	testPods(t, admin, h, nodeName)

	// Stopped, the kubelet stops heartbeating: the node lifecycle
	// controller marks the node NotReady (Unknown) after its grace period.
	if err := c.Stop(ctx, "kubelet"); err != nil {
		t.Fatal(err)
	}
	// The kubelet logs to standard error: here the service's own log.
	if !strings.Contains(hostFile(h, kubeletLog), "(simulated by winsim)") {
		t.Errorf("the kubelet's log does not say it is simulated")
	}
	testkit.Eventually(t, 120*time.Second, "node "+nodeName+" NotReady after the kubelet stopped", func() (bool, string) {
		n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n) != corev1.ConditionTrue, string(nodeReady(n))
	})

	// Started again, it reuses its credentials (no new CSR) and is Ready.
	csrsBefore, _ := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	servingDecisions := strings.Count(hostFile(h, kubeletLog), usingServingCert)
	if err := c.Start(ctx, "kubelet"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 180*time.Second, "node "+nodeName+" Ready again after a restart", func() (bool, string) {
		n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n) == corev1.ConditionTrue, string(nodeReady(n))
	})
	// Ready shows it decided on its client certificate; its serving
	// certificate it decides on afterwards, and says so.
	testkit.Eventually(t, 60*time.Second, "the restarted kubelet deciding on its serving certificate", func() (bool, string) {
		log := hostFile(h, kubeletLog)
		return strings.Count(log, usingServingCert) > servingDecisions, log
	})
	csrsAfter, _ := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if len(csrsAfter.Items) != len(csrsBefore.Items) {
		var names []string
		for _, c := range csrsAfter.Items {
			names = append(names, c.Name+" "+c.Spec.SignerName+" "+c.Spec.Username)
		}
		t.Errorf("the restarted kubelet made %d new CSRs; it should reuse its certificates. CSRs now:\n%s",
			len(csrsAfter.Items)-len(csrsBefore.Items), strings.Join(names, "\n"))
	}
}

// testPods: a Windows pod bound to the node runs; deleted, it goes; a
// Linux-only pod is rejected; a pod whose image is of another Windows build
// than the host's (2019) stays Pending with ErrImagePull.
func testPods(t *testing.T, admin kubernetes.Interface, h *winsim.Host, nodeName string) {
	ctx := context.Background()
	ns := "default"
	// The service account admission plugin needs the namespace's default
	// account, which the controller manager may not have made yet.
	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "iis", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:     nodeName,
			NodeSelector: map[string]string{"kubernetes.io/os": "windows"},
			Tolerations:  []corev1.Toleration{{Key: "os", Value: "Windows", Effect: corev1.TaintEffectNoSchedule}},
			Containers:   []corev1.Container{{Name: "iis", Image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019"}},
		},
	}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "pod iis Running", func() (bool, string) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "iis", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready, string(p.Status.Phase)
	})
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "iis", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(30))}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "pod iis gone after deletion", func() (bool, string) {
		_, err := admin.CoreV1().Pods(ns).Get(ctx, "iis", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	linux := pod.DeepCopy()
	linux.Name = "linux-only"
	linux.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, linux, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "the Linux-only pod rejected", func() (bool, string) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "linux-only", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "NodeAffinity", string(p.Status.Phase)
	})
	_ = admin.CoreV1().Pods(ns).Delete(ctx, "linux-only", metav1.DeleteOptions{})
	testRuntimeClasses(t, admin, h, pod)

	newer := pod.DeepCopy()
	newer.Name = "iis-2022"
	newer.Spec.Containers[0].Image = "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, newer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "the ltsc2022 pod failing to pull on a 2019 host", func() (bool, string) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "iis-2022", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		// ErrImagePull, then ImagePullBackOff until the next try (which
		// quotes the pull's error): either says why.
		return p.Status.Phase == corev1.PodPending && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") &&
			strings.Contains(w.Message, "a Windows version 10.0.20348-based image is incompatible with a 10.0.17763 host"), w.Reason + ": " + w.Message
	})
	_ = admin.CoreV1().Pods(ns).Delete(ctx, "iis-2022", metav1.DeleteOptions{})
}

// TestKubeletNeedsContainerd runs kubelet.exe over SSH on a host whose
// containerd is stopped: it fails as the kubelet does when its runtime's
// pipe does not answer.
func TestKubeletNeedsContainerd(t *testing.T) {
	standin := testenv.Binary(t, "cmd/winsim-standin")
	h, key := newHost(t, standin)
	ctx := context.Background()
	if err := h.SCM().Stop(ctx, "containerd"); err != nil {
		t.Fatal(err)
	}
	client := fixture.Dial(t, h, key)
	s, _ := client.NewSession()
	out, err := s.CombinedOutput(`C:\k\kubelet --kubeconfig=C:\k\kubeconfig`)
	ee, ok := err.(*ssh.ExitError)
	if !ok || ee.ExitStatus() != 1 || !strings.Contains(string(out), "rpc error: code = Unavailable desc = connection error") {
		t.Errorf("kubelet without containerd: %v\n%s", err, out)
	}
	s, _ = client.NewSession()
	out, err = s.CombinedOutput(`C:\k\kubelet.exe --not-a-kubelet-flag`)
	if ee, ok := err.(*ssh.ExitError); !ok || ee.ExitStatus() != 1 || !strings.Contains(string(out), "unknown flag: --not-a-kubelet-flag") {
		t.Errorf("kubelet with an unknown flag: %v\n%s", err, out)
	}
}

// testRuntimeClasses: a pod whose RuntimeClass names containerd's Windows
// handler runs; one naming a handler containerd does not have never does.
func testRuntimeClasses(t *testing.T, admin kubernetes.Interface, h *winsim.Host, pod *corev1.Pod) {
	ctx := context.Background()
	for name, handler := range map[string]string{"windows-test": RuntimeHandler, "other-test": "kata"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
		if _, err := admin.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	good, bad := pod.DeepCopy(), pod.DeepCopy()
	good.Name, good.Spec.RuntimeClassName = "with-windows-handler", ptr.To("windows-test")
	bad.Name, bad.Spec.RuntimeClassName = "with-other-handler", ptr.To("other-test")
	for _, p := range []*corev1.Pod{bad, good} {
		if _, err := admin.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{})
		})
	}
	testkit.Eventually(t, 60*time.Second, "the pod of handler "+RuntimeHandler+" Running", func() (bool, string) {
		p, err := admin.CoreV1().Pods(good.Namespace).Get(ctx, good.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	// The kubelet tried the other pod's sandbox, and says why it failed.
	refused := fmt.Sprintf("pod %s/%s: Failed to create pod sandbox", bad.Namespace, bad.Name)
	testkit.Eventually(t, 60*time.Second, "the kubelet trying the sandbox of the pod of handler kata", func() (bool, string) {
		log := hostFile(h, kubeletLog)
		return strings.Contains(log, refused) && strings.Contains(log, `no runtime for "kata" is configured`), log
	})
	p, err := admin.CoreV1().Pods(bad.Namespace).Get(ctx, bad.Name, metav1.GetOptions{})
	if err != nil || p.Status.Phase == corev1.PodRunning || len(p.Status.ContainerStatuses) > 0 {
		t.Errorf("a pod whose RuntimeClass names a handler containerd lacks: %v, %v", p.Status, err)
	}
}

// checkNetworkGate: the node registers NotReady, with the real kubelet's
// message, while containerd has no CNI configuration, and while the HNS
// network its configuration names does not exist; then the network is set
// up as flanneld and winnode would.
func checkNetworkGate(t *testing.T, admin kubernetes.Interface, h *winsim.Host, nodeName string) {
	t.Helper()
	ctx := context.Background()
	notReady := func(what string) {
		testkit.Eventually(t, 90*time.Second, "node "+nodeName+" NotReady "+what, func() (bool, string) {
			n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"), c.Message
				}
			}
			return false, "no Ready condition"
		})
	}
	notReady("without a CNI configuration")
	// The IPAM plugin containerd runs for each pod: the Linux build of the
	// real host-local, where the payload puts its Windows build.
	hostLocal, err := testenv.HostLocal()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(hostLocal)
	if err != nil {
		t.Fatal(err)
	}
	writeHostFile(t, h, `C:\k\cni\bin\host-local.exe`, data)
	writeHostFile(t, h, `C:\k\cni\config\10-test.conf`, []byte(`{"cniVersion":"0.2.0","name":"vxlan0","type":"win-overlay","ipam":{"type":"host-local","subnet":"10.244.9.0/24"}}`))
	heartbeats(t, admin, nodeName)
	notReady("while HNS network vxlan0 does not exist")
	if _, err := h.HNS().CreateNetwork(simhns.Network{Name: "vxlan0", Type: simhns.TypeOverlay, VNI: 4096, Port: 4789,
		Subnets: []simhns.Subnet{{AddressPrefix: "10.244.9.0/24", GatewayAddress: "10.244.9.1"}}}); err != nil {
		t.Fatal(err)
	}
}
