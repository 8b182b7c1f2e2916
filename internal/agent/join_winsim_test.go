//go:build !windows

package agent_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/image"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/cloud"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// The token's secret half in the join configs below: never in a log.
const pullTokenSecret = "0123456789abcdef"

// TestPullJoin runs the Pull-mode tests on one simulated payload (the
// agent's and the stand-ins' Linux builds, compressed as `make payload`
// compresses them, which is slow under the race detector): each test
// writes its own image from it.
func TestPullJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("Pull-mode tests build the agent and the stand-ins; skipped with -short")
	}
	payloadDir := t.TempDir()
	if _, err := simpayload.Build(payloadDir, simpayload.Options{Cache: testenv.PayloadCache(t),
		AgentBinary: testenv.Binary(t, "cmd/winnode-agent"), StandinBinary: testenv.Binary(t, "cmd/winsim-standin"),
		ServiceBinary: testenv.Binary(t, "cmd/winnode-service"),
	}); err != nil {
		t.Fatal(err)
	}
	t.Run("joins", func(t *testing.T) { testJoinOnSimulatedHost(t, payloadDir) })
	t.Run("refuses a damaged image", func(t *testing.T) { testJoinRefusesTamperedImage(t, payloadDir) })
	t.Run("refuses an unsupported version", func(t *testing.T) { testJoinRefusesUnsupportedVersion(t, payloadDir) })
	t.Run("refuses a foreign containerd", func(t *testing.T) { testJoinRefusesForeignContainerd(t, payloadDir) })
}

// pullImage is a simulated Windows image as `winnodectl image` writes it,
// from the simulated payload in payloadDir.
func pullImage(t *testing.T, payloadDir string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "image")
	if _, err := image.Write(payloadDir, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pullConfig is a join config for node, the operator of version
// operatorVersion having written it.
func pullConfig(node, operatorVersion, server string, ca []byte, token string) *joinconfig.Config {
	return &joinconfig.Config{
		SchemaVersion: joinconfig.SchemaVersion, OperatorVersion: operatorVersion, AgentVersions: joinconfig.SupportedAgents(operatorVersion),
		Machine: "capi-windows/" + node, NodeName: node,
		Cluster: joinconfig.Cluster{Server: server, CAData: ca, ClusterDNS: []string{testenv.KubernetesDNSIP}},
		Network: joinconfig.Network{Mode: plan.NetworkFlannel, ClusterCIDR: testenv.ClusterCIDR, ServiceCIDR: testenv.ServiceCIDR,
			NetworkName: "vxlan0", VNI: 4096, Port: 4789},
		BootstrapToken: joinconfig.Secret(token),
	}
}

// bootPull boots a simulated host from img with the Pull data of cfg,
// through the simulated infrastructure provider, as it boots a Cluster
// API Machine: the image installed, the data run by the simulated
// cloudbase-init, the host started (and the agent with it).
func bootPull(t *testing.T, img string, cfg *joinconfig.Config) *winsim.Host {
	t.Helper()
	return bootPullWith(t, img, cfg, winsim.Options{})
}

// bootPullWith is bootPull on a host made with opts (its state folder,
// stand-in and logger set here).
func bootPullWith(t *testing.T, img string, cfg *joinconfig.Config, opts winsim.Options) *winsim.Host {
	t.Helper()
	data, err := capibootstrap.PullBootstrapData(capibootstrap.PullInput{
		Namespace: "capi-windows", Machine: cfg.NodeName, ComputerName: cfg.NodeName, Join: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := cloud.New(cloud.Options{
		NewHost: func(string) (*winsim.Host, error) {
			o := opts
			o.StateDir, o.StandinBinary = t.TempDir(), testenv.Binary(t, "cmd/winsim-standin")
			o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			return winsim.New(o)
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	t.Cleanup(func() { _ = c.Close() })
	c.AddImage("winnode", img)
	inst, err := c.Create(cfg.NodeName, "winnode", data)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Hostname != cfg.NodeName {
		t.Errorf("instance %s has hostname %q; want the Pull data's computer name", inst.Name, inst.Hostname)
	}
	return c.Host(inst.Name)
}

// joinEnded waits for the agent the Pull data runs to end; it returns its
// exit code, its log (joinconfig.LogPath) and cloudbase-init's.
func joinEnded(t *testing.T, h *winsim.Host, timeout time.Duration) (int, string, string) {
	t.Helper()
	var code int
	testkit.Eventually(t, timeout, "winnode-agent join to end", func() (bool, string) {
		_, ended, c := h.UserDataProgram()
		code = c
		return ended, "running"
	})
	read := func(p string) string {
		local, _ := h.Path(p)
		data, _ := os.ReadFile(local)
		return string(data)
	}
	joinLog, cbLog := read(joinconfig.LogPath), read(winsim.CloudbaseInitLog)
	if strings.Contains(joinLog+cbLog, pullTokenSecret) {
		t.Errorf("the bootstrap token's secret is in a log on the host")
	}
	return code, joinLog, cbLog
}

// testJoinRefusesTamperedImage: a payload file of the image that does not
// match the image's manifest, or is missing, stops the join before
// anything is installed, named in the host's log.
func testJoinRefusesTamperedImage(t *testing.T, payloadDir string) {
	for _, tc := range []struct {
		name, hostPath, want string
		damage               func(local string) error
	}{
		{"changed", `C:\k\kubelet.exe`, "payload file kubelet.exe: 40 bytes, the image's manifest says", func(local string) error {
			return os.WriteFile(local, []byte("not the kubelet the image was built with"), 0o755)
		}},
		{"missing", `C:\k\kube-proxy.exe`, "payload file kube-proxy.exe: missing", os.Remove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := pullImage(t, payloadDir)
			local, _ := image.Local(img, tc.hostPath)
			if err := tc.damage(local); err != nil {
				t.Fatal(err)
			}
			h := bootPull(t, img, pullConfig("win-tamper1", "dev", "https://127.0.0.1:6443", testkit.SelfSignedCA(t), "abcdef."+pullTokenSecret))
			code, joinLog, cbLog := joinEnded(t, h, 2*time.Minute)
			// The log is logfmt: a Windows path's backslashes are escaped.
			// The pre-flight checks ran first, and say the API server
			// (no such server, another CA) is not reached.
			for _, want := range []string{"Image", strings.ReplaceAll(tc.hostPath, `\`, `\\`), tc.want, "step=preflight check=api-server result=fail"} {
				if code == 0 || !strings.Contains(joinLog, want) {
					t.Errorf("exit code %d; the join log lacks %q:\n%s", code, want, joinLog)
				}
			}
			if !strings.Contains(cbLog, tc.want) {
				t.Errorf("cloudbase-init's log does not say why:\n%s", cbLog)
			}
			if _, err := h.SCM().Get(context.Background(), plan.KubeletService); err == nil {
				t.Error("the kubelet service was installed from a damaged image")
			}
			if local, _ := h.Path(`C:\run\cluster-api\bootstrap-success.complete`); fileExists(local) {
				t.Error("Cluster API's sentinel says the bootstrap succeeded")
			}
		})
	}
}

// testJoinRefusesUnsupportedVersion: an image whose agent the operator
// does not support (here a development build, for an operator of v0.5.2)
// installs nothing, and the log says which versions the operator takes.
func testJoinRefusesUnsupportedVersion(t *testing.T, payloadDir string) {
	h := bootPull(t, pullImage(t, payloadDir), pullConfig("win-old01", "v0.5.2", "https://127.0.0.1:6443", testkit.SelfSignedCA(t), "abcdef."+pullTokenSecret))
	code, joinLog, _ := joinEnded(t, h, 2*time.Minute)
	for _, want := range []string{"UnsupportedVersion", "winnode v0.5.2", "v0.4.x to v0.5.x", "winnodectl image"} {
		if code == 0 || !strings.Contains(joinLog, want) {
			t.Errorf("exit code %d; the join log lacks %q:\n%s", code, want, joinLog)
		}
	}
	if _, err := h.SCM().Get(context.Background(), plan.KubeletService); err == nil {
		t.Error("the kubelet service was installed by an unsupported agent")
	}
}

// testJoinRefusesForeignContainerd: an image that runs a containerd of its
// own (registered by containerd's --register-service) is refused by name,
// and that containerd is left as it was rather than taken over by the
// containerd the join installs.
func testJoinRefusesForeignContainerd(t *testing.T, payloadDir string) {
	h := bootPullWith(t, pullImage(t, payloadDir), pullConfig("win-ctd01", "dev", "https://127.0.0.1:6443", testkit.SelfSignedCA(t), "abcdef."+pullTokenSecret),
		winsim.Options{ForeignContainerd: true})
	code, joinLog, _ := joinEnded(t, h, 2*time.Minute)
	for _, want := range []string{"a containerd winnode did not install", "containerd.exe --unregister-service"} {
		if code == 0 || !strings.Contains(joinLog, want) {
			t.Errorf("exit code %d; the join log lacks %q:\n%s", code, want, joinLog)
		}
	}
	svc, err := h.SCM().Get(context.Background(), plan.ContainerdService)
	if err != nil || svc.Config.Description == plan.ServiceDescription {
		t.Errorf("the image's containerd service: %+v, %v: want it left as the image had it", svc, err)
	}
	if _, err := h.SCM().Get(context.Background(), plan.KubeletService); err == nil {
		t.Error("the kubelet service was installed beside a foreign containerd")
	}
}

// testJoinOnSimulatedHost: the Pull data alone makes the host a Ready node
// of a real control plane, and no SSH key gets in. The agent in the image checks the image, renders and
// applies the plan, the kubelet joins with the bootstrap token (its CSR
// approved with winnode's decision, as the operator does), and once the
// Node has its pod subnet, kube-proxy's service writes the CNI
// configuration and starts kube-proxy, with no second apply.
func testJoinOnSimulatedHost(t *testing.T, payloadDir string) {
	img := pullImage(t, payloadDir)
	env := testenv.Get(t)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const node = "win-pull01"
	tok, err := bootstrap.NewToken("pull."+node, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := bootstrap.EnsureRBAC(ctx, kube); err != nil {
		t.Fatal(err)
	}
	if err := bootstrap.StoreToken(ctx, kube, tok); err != nil {
		t.Fatal(err)
	}
	ci, err := bootstrap.LoadClusterInfo(ctx, kube)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pullConfig(node, "dev", ci.Server, ci.CAData, tok.Value())
	h := bootPull(t, img, cfg)
	go approveCSRs(ctx, t, kube, winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "pull." + node},
		Spec:       winnodev1.WindowsInstanceSpec{Address: h.IP()},
		Status:     winnodev1.WindowsInstanceStatus{BootstrapTokenID: tok.ID, NodeName: node},
	})

	code, joinLog, cbLog := joinEnded(t, h, 5*time.Minute)
	if code != 0 {
		t.Fatalf("winnode-agent join: exit code %d\njoin log:\n%s\ncloudbase-init's log:\n%s", code, joinLog, cbLog)
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || n.Spec.PodCIDR == "" || !hasTaint(n, "os", "Windows") {
		t.Fatalf("Node %s: %v, %+v", node, err, n)
	}
	// The Node turns Ready once kube-proxy's service wrote the CNI
	// configuration for its subnet (pod-network), which join does not
	// wait for.
	testkit.Eventually(t, 2*time.Minute, "Node "+node+" to be Ready", func() (bool, string) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n), "not Ready"
	})
	for _, svc := range []string{plan.KubeletService, plan.FlanneldService, plan.KubeProxyService} {
		if s, err := h.SCM().Get(ctx, svc); err != nil || s.Status.State != simscm.Running {
			log, _ := h.Path(plan.LogFile(svc))
			text, _ := os.ReadFile(log)
			t.Errorf("service %s: %+v, %v; want Running. Its log:\n%s", svc, s, err, text)
		} else if s.Status.Failures > 0 && svc == plan.KubeProxyService {
			log, _ := h.Path(plan.LogFile(svc))
			text, _ := os.ReadFile(log)
			t.Errorf("service %s failed %d times before it ran: its log:\n%s", svc, s.Status.Failures, text)
		}
	}
	conf, _ := h.Path(plan.CNIConfPath)
	if data, err := os.ReadFile(conf); err != nil || !strings.Contains(string(data), n.Spec.PodCIDR) {
		t.Errorf("CNI configuration: %v; want one on the Node's subnet %s:\n%s", err, n.Spec.PodCIDR, data)
	}
	for _, want := range []string{"every payload file of the image matches its manifest", "the Node is registered", "podCIDR=" + n.Spec.PodCIDR, "msg=joined",
		"step=preflight check=api-server result=pass", "step=preflight check=windows-build result=pass"} {
		if !strings.Contains(joinLog, want) {
			t.Errorf("the join log lacks %q:\n%s", want, joinLog)
		}
	}
	if local, _ := h.Path(`C:\run\cluster-api\bootstrap-success.complete`); !fileExists(local) {
		t.Error("no Cluster API sentinel after a join")
	}
	refusesSSH(t, h)
}

// refusesSSH checks that no SSH key logs in to h: the Pull data authorizes
// none, so the operator (or anyone) has no SSH path to a Pull host.
func refusesSSH(t *testing.T, h *winsim.Host) {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ssh.Dial("tcp", h.Addr(), &ssh.ClientConfig{
		User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(h.HostKey()), Timeout: time.Minute,
	})
	if err == nil {
		_ = client.Close()
		t.Fatal("an SSH key logged in to a Pull host: its bootstrap data authorized one")
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("SSH to the Pull host: %v; want the key refused", err)
	}
	if local, _ := h.Path(winsim.AuthorizedKeysPath); fileExists(local) {
		t.Errorf("the Pull host has %s", winsim.AuthorizedKeysPath)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// approveCSRs approves, until ctx ends, the CSRs winnode's decision
// approves for inst: what the operator's approver does for a Pull Machine.
func approveCSRs(ctx context.Context, t *testing.T, kube kubernetes.Interface, inst winnodev1.WindowsInstance) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		csrs, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		facts, err := csrapproval.LoadFacts(ctx, kube, csrapproval.DefaultPolicy())
		if err != nil {
			continue
		}
		for i := range csrs.Items {
			csr := &csrs.Items[i]
			if len(csr.Status.Conditions) > 0 {
				continue
			}
			if d := csrapproval.Decide(csr, []winnodev1.WindowsInstance{inst}, facts); d.Approve {
				if err := csrapproval.Approve(ctx, kube, csr, d.Reason); err != nil && ctx.Err() == nil {
					t.Logf("approving %s: %v", csr.Name, err)
				}
			}
		}
	}
}

func hasTaint(n *corev1.Node, key, value string) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == key && taint.Value == value && taint.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
