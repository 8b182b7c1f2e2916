package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
	"github.com/winnode/winnode/internal/winsim"
)

// cluster is the shared control plane with a client and the operator's
// namespace.
type cluster struct {
	env *testenv.Env
	c   client.Client
}

func getCluster(t *testing.T) cluster {
	t.Helper()
	env := testenv.Get(t)
	c, err := NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: defaultNamespace}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return cluster{env: env, c: c}
}

// instance creates the WindowsInstance b builds (made by hand unless it
// names a source) and sets its status, as the operator would; it is
// deleted when the test ends.
func (cl cluster) instance(t *testing.T, b *builder.InstanceBuilder) *winnodev1.WindowsInstance {
	t.Helper()
	ctx := context.Background()
	inst := b.Build()
	if inst.Spec.Source.Kind == "" {
		inst.Spec.Source.Kind = winnodev1.SourceManual
	}
	status := inst.Status
	if err := cl.c.Create(ctx, inst); err != nil {
		t.Fatalf("creating WindowsInstance %s: %v", inst.Name, err)
	}
	t.Cleanup(func() { _ = cl.c.Delete(context.Background(), inst) })
	inst.Status = status
	if err := cl.c.Status().Update(ctx, inst); err != nil {
		t.Fatalf("setting the status of WindowsInstance %s: %v", inst.Name, err)
	}
	return inst
}

func TestStatusAgainstCluster(t *testing.T) {
	cl := getCluster(t)
	ctx := context.Background()

	node := builder.Node("status-node").Heartbeat(corev1.ConditionTrue, "KubeletReady").Build()
	status := node.Status // not written by a create
	if err := cl.c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.c.Delete(context.Background(), node) })
	// A patch: the node lifecycle controller may change the Node meanwhile.
	before := node.DeepCopy()
	node.Status.Conditions = status.Conditions
	if err := cl.c.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	cl.instance(t, builder.Instance("status-ready").Host("192.0.2.10", "Administrator").Port(22).
		Phase(winnodev1.PhaseReady).Node("status-node", "").Version("v9.9.9"))
	cl.instance(t, builder.Instance("status-failed").Host("192.0.2.11", "Administrator").Port(22).
		Phase(winnodev1.PhaseFailed).Step("connect").Node("status-gone", "").
		LastError("connecting to 192.0.2.11:22: i/o timeout; check that the host is up"))

	// A Cluster API Machine in Pull mode: no WindowsInstance, its data
	// written (this cluster serves no Machines: it is shown from its
	// WinnodeConfig alone).
	pull := &bootstrapv1.WinnodeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "status-pull",
		Labels:          map[string]string{clusterv1.ClusterNameLabel: "workload-a"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: "status-pull", UID: "uid-1"}}},
		Spec: bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePull}}
	if err := cl.c.Create(ctx, pull); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.c.Delete(context.Background(), pull) })
	pull.Status.ComputerName, pull.Status.DataSecretName, pull.Status.Initialization.DataSecretCreated = "wa-x2vzq1", "status-pull", ptr.To(true)
	if err := cl.c.Status().Update(ctx, pull); err != nil {
		t.Fatal(err)
	}

	r := run(t, "", "status", "--kubeconfig", cl.env.KubeconfigPath, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("status -o json: exit %d: %s", r.code, r.err)
	}
	var got struct {
		Instances    []view.InstanceRow
		PullMachines []view.PullRow
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("status -o json printed no JSON: %v\n%s", err, r.out)
	}
	byName := map[string]view.InstanceRow{}
	for _, row := range got.Instances {
		byName[row.Name] = row
	}
	if row := byName["status-ready"]; row.Phase != "Ready" || row.Node != "status-node" || row.NodeStatus != "Ready" || row.Version != "v9.9.9" || row.Address != "192.0.2.10" {
		t.Errorf("status-ready: %+v", row)
	}
	if row := byName["status-failed"]; row.Phase != "Failed" || row.NodeStatus != "Missing" || !strings.Contains(row.LastError, "i/o timeout") || row.Step != "connect" {
		t.Errorf("status-failed: %+v", row)
	}
	if len(got.PullMachines) != 1 || got.PullMachines[0].Machine != "default/status-pull" || got.PullMachines[0].Stage != view.StageDataWritten ||
		got.PullMachines[0].Cluster != "workload-a" || got.PullMachines[0].ComputerName != "wa-x2vzq1" {
		t.Errorf("pullMachines %+v; want default/status-pull, DataWritten", got.PullMachines)
	}

	r = run(t, "", "status", "--kubeconfig", cl.env.KubeconfigPath)
	if r.code != ExitOK {
		t.Fatalf("status: exit %d: %s", r.code, r.err)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if !strings.HasPrefix(lines[0], "NAME ") || !strings.Contains(lines[0], "LAST ERROR") {
		t.Errorf("no header line: %q", lines[0])
	}
	for _, want := range []string{"status-ready", "status-failed", "Cluster API Machines in Pull mode", "default/status-pull", "DataWritten"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the table lacks %s:\n%s", want, r.out)
		}
	}

	// A cluster that cannot be reached: exit 1, the address named.
	r = run(t, "", "status", "--kubeconfig", "/nonexistent/kubeconfig")
	if r.code != ExitFailed || !strings.Contains(r.err, "/nonexistent/kubeconfig") {
		t.Errorf("a missing kubeconfig: exit %d, stderr %q", r.code, r.err)
	}
}

// simHost starts one simulated host that accepts the returned key, with the
// stand-in containerd installed. The test fails if anything was run there
// as Administrator from where a local user could write (issue 11).
func simHost(t *testing.T) (*winsim.Host, ssh.Signer, []byte) {
	t.Helper()
	h, key := fixture.SimHost(t, winsim.Options{StandinBinary: testenv.Binary(t, "cmd/winsim-standin")})
	t.Cleanup(func() {
		for _, e := range h.UnsafeExecs() {
			t.Errorf("host %s: ran %s as Administrator although %s", h.Hostname(), e.Program, e.Why)
		}
	})
	return h, key.Signer, key.PEM
}

// keySecret puts pemKey in Secret cloud-private-key for the test.
func (cl cluster) keySecret(t *testing.T, pemKey []byte) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: defaultNamespace, Name: sshkey.PrivateKeySecret},
		Data:       map[string][]byte{sshkey.PrivateKeyKey: pemKey},
	}
	_ = cl.c.Delete(ctx, secret)
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.c.Delete(context.Background(), secret) })
}

func TestSSHAgainstSimulatedHost(t *testing.T) {
	cl := getCluster(t)
	h, _, pemKey := simHost(t)
	cl.keySecret(t, pemKey)
	hostKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.HostKey())))
	nodeName := strings.ToLower(h.Hostname())
	cl.instance(t, builder.Instance("ssh-host").Host(h.IP(), h.User()).Port(int32(h.Port())).
		Phase(winnodev1.PhaseReady).Node(nodeName, "").PinnedHostKey(hostKey))
	kc := cl.env.KubeconfigPath
	// A program every Windows host has (a stock host runs no containerd).
	hostname := `C:\Windows\System32\hostname.exe`

	t.Run("one command by node name", func(t *testing.T) {
		r := run(t, "", "ssh", "--kubeconfig", kc, nodeName, "--", hostname)
		if r.code != 0 || strings.TrimSpace(r.out) != h.Hostname() {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
		}
	})
	t.Run("the remote exit status and stderr come back", func(t *testing.T) {
		r := run(t, "", "ssh", "--kubeconfig", kc, h.IP(), "--", `C:\k\no-such-program.exe`, "x")
		if r.code != 1 || !strings.Contains(r.err, "is not recognized") {
			t.Errorf("exit %d, stderr %q; want 1 and cmd.exe's message", r.code, r.err)
		}
	})
	t.Run("a key file instead of the Secret", func(t *testing.T) {
		file := t.TempDir() + "/key"
		if err := os.WriteFile(file, pemKey, 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, "", "ssh", "--kubeconfig", kc, "--ssh-key", file, "ssh-host", "--", hostname)
		if r.code != 0 || strings.TrimSpace(r.out) != h.Hostname() {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
		}
	})
	t.Run("an interactive session reaches the host, which has no shell", func(t *testing.T) {
		r := run(t, "", "ssh", "--kubeconfig", kc, nodeName)
		if r.code != 1 || !strings.Contains(r.err, "interactive shells are not simulated") {
			t.Errorf("exit %d, stderr %q", r.code, r.err)
		}
	})
	t.Run("unknown host", func(t *testing.T) {
		r := run(t, "", "ssh", "--kubeconfig", kc, "no-such-node", "--", hostname)
		if r.code != ExitSSHFailed || !strings.Contains(r.err, `"no-such-node"`) {
			t.Errorf("exit %d, stderr %q", r.code, r.err)
		}
	})
}

func TestSSHRefusesUnpinnedOrChangedHostKey(t *testing.T) {
	cl := getCluster(t)
	h, _, pemKey := simHost(t)
	cl.keySecret(t, pemKey)
	instance := func(name string) *builder.InstanceBuilder {
		return builder.Instance(name).Host(h.IP(), h.User()).Port(int32(h.Port()))
	}
	kc := cl.env.KubeconfigPath

	cl.instance(t, instance("ssh-unpinned").Phase(winnodev1.PhaseConfiguring))
	r := run(t, "", "ssh", "--kubeconfig", kc, "ssh-unpinned", "--", `C:\Windows\System32\hostname.exe`)
	if r.code != ExitSSHFailed || !strings.Contains(r.err, "no pinned host key") || r.out != "" {
		t.Errorf("no pinned key: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}

	otherSigner := fixture.NewKey(t).Signer
	wrong := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(otherSigner.PublicKey())))
	cl.instance(t, instance("ssh-changed").Phase(winnodev1.PhaseReady).PinnedHostKey(wrong))
	r = run(t, "", "ssh", "--kubeconfig", kc, "ssh-changed", "--", `C:\Windows\System32\hostname.exe`)
	if r.code != ExitSSHFailed || !strings.Contains(r.err, h.Fingerprint()) || r.out != "" {
		t.Errorf("changed key: exit %d, stdout %q, stderr %q; want 255 naming the presented key %s", r.code, r.out, r.err, h.Fingerprint())
	}

	// Both instances have the same address: naming it is ambiguous.
	r = run(t, "", "ssh", "--kubeconfig", kc, h.IP(), "--", `C:\Windows\System32\hostname.exe`)
	if r.code != ExitSSHFailed || !strings.Contains(r.err, "several") {
		t.Errorf("ambiguous address: exit %d, stderr %q", r.code, r.err)
	}
}

// TestStatusWatch: --watch prints a line when a host changes, and stops
// cleanly (exit 0) on Ctrl-C.
func TestStatusWatch(t *testing.T) {
	cl := getCluster(t)
	inst := cl.instance(t, builder.Instance("watched").Host("192.0.2.20", "Administrator").Port(22).
		Phase(winnodev1.PhaseConfiguring).Step("sync"))
	// Another host, whose change shows the watch has looked at both.
	other := cl.instance(t, builder.Instance("watched-other").Host("192.0.2.21", "Administrator").Port(22).
		Phase(winnodev1.PhaseConfiguring).Step("sync"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out fixture.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, []string{"status", "--kubeconfig", cl.env.KubeconfigPath, "--watch", "--watch-interval", "100ms"},
			Streams{In: strings.NewReader(""), Out: &out, Err: io.Discard})
	}()
	waitFor := func(what string) {
		t.Helper()
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("status --watch printing %q", what), func() (bool, string) {
			return strings.Contains(out.String(), what), out.String()
		})
	}
	fail := func(inst *winnodev1.WindowsInstance, msg string) {
		t.Helper()
		before := inst.DeepCopy()
		inst.Status.Phase, inst.Status.Step, inst.Status.LastError = winnodev1.PhaseFailed, "connect", "step connect: "+msg
		if err := cl.c.Status().Patch(context.Background(), inst, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("Watching")
	// Once the other host's change is printed, the watch has looked at
	// this one too, unchanged since the table.
	fail(other, "no route to host")
	waitFor("192.0.2.21: Failed: step connect: no route to host")
	if strings.Contains(out.String(), "192.0.2.20: Configuring, step sync") {
		t.Errorf("--watch printed the current state as a change:\n%s", out.String())
	}
	fail(inst, "connection refused")
	waitFor("192.0.2.20: Failed: step connect: connection refused")
	if strings.Count(out.String(), "step connect: connection refused") != 1 || strings.Contains(out.String(), "step connect: step connect") {
		t.Errorf("status --watch names the failed step more than once:\n%s", out.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("status --watch ended with %d on Ctrl-C, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("status --watch did not stop within 10s of Ctrl-C")
	}

	if r := run(t, "", "status", "--watch", "-o", "json"); r.code != ExitUsage {
		t.Errorf("--watch with -o json: exit %d, want %d", r.code, ExitUsage)
	}
}
