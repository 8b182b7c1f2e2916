//go:build linux

package demo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// TestMain removes the binaries the tests built, as testenv requires. The
// tests' own process hands controller-runtime and klog the demo's
// switchable logger first, as the demo does (logs.go): the tests use
// controller-runtime's client minutes after the start, which would print
// its stack trace, and its first logger is its last.
func TestMain(m *testing.M) {
	routeLibraryLogs(nil)
	testenv.Main(m)
}

// result is what one winnodectl run printed and returned.
type result struct {
	code     int
	out, err string
}

// run runs winnodectl, with the demo as cmd/winnodectl wires it, in process.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	s := cli.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}
	code := cli.Execute(context.Background(), args, s, NewCommand(s))
	return result{code: code, out: out.String(), err: errOut.String()}
}

// TestDemoReadyThenSIGTERM runs the built winnodectl as a user would:
// `winnodectl demo --hosts 2`, not on a terminal. It must print plain
// progress lines, reach 2 Ready Windows nodes, write the kubeconfig, and on
// SIGTERM stop everything it started (control plane, simulated hosts and
// the programs on them) and exit 0.
func TestDemoReadyThenSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane of its own and two simulated hosts")
	}
	bin := testenv.Binary(t, "cmd/winnodectl")
	work := t.TempDir()
	kubeconfig := filepath.Join(work, "out", "admin.kubeconfig")

	cmd := exec.Command(bin, "demo", "--hosts", "2", "--windows-build", "2019,2022", "--workdir", filepath.Join(work, "demo"), "--kubeconfig-out", kubeconfig, "--ready-timeout", "6m")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var output strings.Builder
	readyLine := make(chan struct{})
	tryLines := make(chan string, 1) // the output up to the end of the "Try" lines
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			line := sc.Text()
			output.WriteString(line + "\n")
			if !once && strings.Contains(line, "simulated Windows hosts are Ready nodes") {
				once = true
				close(readyLine)
			}
			if strings.Contains(line, "The demo runs until Ctrl-C") {
				tryLines <- output.String()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	select {
	case <-readyLine:
	case err := <-exited:
		t.Fatalf("the demo exited before Ready (%v)\nstdout:\n%s\nstderr:\n%s", err, output.String(), stderr.String())
	case <-time.After(8 * time.Minute):
		t.Fatalf("the demo did not report Ready within 8 minutes\nstdout:\n%s\nstderr:\n%s", output.String(), stderr.String())
	}

	// What it started, before stopping it.
	children := descendants(cmd.Process.Pid)
	var names []string
	for _, c := range children {
		names = append(names, c.name)
	}
	for _, want := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kubelet.exe", "containerd.exe"} {
		if !containsPrefix(names, want) {
			t.Errorf("the demo runs no %s among its processes %v", want, names)
		}
	}

	// The kubeconfig works on its own, and shows the two Windows nodes
	// Ready, one of each release; the sample the "try" lines name runs on
	// the 2019 one.
	c := checkDemoCluster(t, kubeconfig, 2)
	checkSampleRuns(t, c, filepath.Join(work, "demo", "windows-web-server.yaml"))
	select {
	case printed := <-tryLines:
		checkTrySSH(t, printed, bin, kubeconfig)
	case err := <-exited:
		t.Fatalf("the demo exited before its \"Try\" lines (%v)", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM the demo exited with %v, want status 0\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the demo did not exit within 90s of SIGTERM\nstdout:\n%s", output.String())
	}

	// Nothing it started is left running (a PID reused meanwhile has
	// another start time).
	testkit.Eventually(t, 10*time.Second, "the processes the demo started to end with it", func() (bool, string) {
		var alive []string
		for _, c := range children {
			if c.alive() {
				alive = append(alive, fmt.Sprintf("%d (%s)", c.pid, c.name))
			}
		}
		return len(alive) == 0, "still running: " + strings.Join(alive, ", ")
	})

	out := output.String()
	for _, want := range []string{"SIMULATED", "Kubeconfig: " + kubeconfig, "kubectl get windowsinstances", "kubectl apply -f " + filepath.Join(work, "demo", "windows-web-server.yaml"), "sed 's/2019/2022/g'", "Stopped."} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("the demo drew with terminal escapes on a pipe:\n%q", out)
	}
	checkNoStackTrace(t, out+stderr.String())
	if _, err := os.Stat(filepath.Join(work, "demo", "hosts")); err != nil {
		t.Errorf("--workdir was not kept: %v", err)
	}
}

// checkDemoCluster lists the Windows nodes through the demo's kubeconfig:
// want Ready ones, of Windows Server 2019 and 2022 in turn.
func checkDemoCluster(t *testing.T, kubeconfig string, want int) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("the demo's --kubeconfig-out %s: %v", kubeconfig, err)
	}
	c, err := cli.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{corev1.LabelOSStable: "windows"}); err != nil {
		t.Fatalf("listing nodes with the demo's kubeconfig: %v", err)
	}
	ready, builds := 0, map[string]int{}
	for i := range nodes.Items {
		if view.NodeReady(&nodes.Items[i]) == "Ready" {
			ready++
		}
		builds[nodes.Items[i].Labels[corev1.LabelWindowsBuild]]++
	}
	if ready != want {
		t.Errorf("%d Ready Windows nodes through the demo's kubeconfig, want %d", ready, want)
	}
	if builds["10.0.17763"] != (want+1)/2 || builds["10.0.20348"] != want/2 {
		t.Errorf("--windows-build 2019,2022 gave nodes of builds %v, want 2019 and 2022 in turn", builds)
	}
	return c
}

// checkSampleRuns applies the web server sample the demo wrote, as its
// "try" lines say, and waits until its pods run, on Windows Server 2019
// nodes only (its RuntimeClass is windows-2019).
func checkSampleRuns(t *testing.T, c client.Client, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the demo wrote no web server sample: %v", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		u.SetNamespace("default")
		if err := c.Create(ctx, &u); err != nil {
			t.Fatalf("kubectl apply -f %s: %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
	var pods corev1.PodList
	testkit.Eventually(t, 3*time.Minute, "the web server sample's 2 pods Running", func() (bool, string) {
		if err := c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": "win-webserver"}); err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, fmt.Sprint(describePods(pods.Items))
	})
	for _, p := range pods.Items {
		var node corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node); err != nil {
			t.Fatal(err)
		}
		if b := node.Labels[corev1.LabelWindowsBuild]; b != "10.0.17763" {
			t.Errorf("pod %s of the 2019 sample runs on node %s of build %s", p.Name, node.Name, b)
		}
	}
}

func describePods(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, " (%s: %s)", c.Type, c.Message)
			}
		}
	}
	return b.String()
}

// proc is a process, identified by PID and start time.
type proc struct {
	pid   int
	start string
	name  string
}

// alive reports whether the same process still exists (and is not a
// zombie).
func (p proc) alive() bool {
	st, err := readStat(p.pid)
	return err == nil && st.start == p.start && st.state != "Z"
}

type stat struct {
	ppid         int
	state, start string
	name         string
}

// readStat reads /proc/PID/stat: the name is in parentheses and may hold
// spaces, so fields are counted after the last ')'.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return stat{}, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 20 {
		return stat{}, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	ppid, _ := strconv.Atoi(f[1])
	return stat{ppid: ppid, state: f[0], start: f[19], name: s[open+1 : end]}, nil
}

// descendants lists every process below pid.
func descendants(pid int) []proc {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]proc{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(p)
		if err != nil {
			continue
		}
		children[st.ppid] = append(children[st.ppid], proc{pid: p, start: st.start, name: st.name})
	}
	var out []proc
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c.pid)
		}
	}
	walk(pid)
	return out
}

func containsPrefix(names []string, prefix string) bool {
	for _, n := range names {
		// /proc/PID/stat keeps the first 15 bytes of the name.
		if strings.HasPrefix(prefix, n) && len(n) >= min(len(prefix), 15) {
			return true
		}
	}
	return false
}

// TestDemoCommands types the demo's terminal commands at a fleet of one
// simulated host: hosts lists it, reboot takes it down and up again, a
// wrong command gets the list, quit stops.
func TestDemoCommands(t *testing.T) {
	// A containerd of the host's own, an auto-start service, shows the
	// reboot started the host's services again.
	fleet, err := winsim.StartFleet(1, winsim.Options{StateDir: t.TempDir(), BootDelay: 200 * time.Millisecond,
		StandinBinary: testenv.Binary(t, "cmd/winsim-standin"), ForeignContainerd: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	h := fleet.Hosts[0]
	var out fixture.SyncBuffer
	d := &demo{s: cli.Streams{Out: &out}, start: time.Now(), fleet: fleet}
	d.say = func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }

	quit := make(chan struct{})
	in := strings.NewReader("hosts\nreboot nowhere\nreboot\nfly\nreboot 1\nquit\nhosts\n")
	d.readCommands(context.Background(), in, func() { close(quit) })
	select {
	case <-quit:
	default:
		t.Fatal("quit did not stop the demo")
	}
	d.reboots.Wait()

	got := out.String()
	for _, want := range []string{
		h.Hostname() + "  " + h.Addr(),             // hosts
		`no simulated host "nowhere"`,              // reboot nowhere
		"reboot HOST: the host's number",           // reboot
		"commands: reboot HOST, hosts, quit",       // fly
		"rebooting simulated host " + h.Hostname(), // reboot 1
		"simulated host " + h.Hostname() + " is up again",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the demo's answers lack %q:\n%s", want, got)
		}
	}
	if strings.Count(got, h.Addr()) != 1 {
		t.Errorf("hosts answered after quit:\n%s", got)
	}
	if !h.Up() {
		t.Error("the host is not up after the reboot")
	}
	// The reboot was real: containerd started again, as after a boot.
	if s, err := h.Services().Get("containerd"); err != nil || s.Status.State != "Running" {
		t.Errorf("containerd after the reboot: %+v, %v", s.Status, err)
	}
}

func TestDemoKubeconfigOutNeverOverwritesOtherClusters(t *testing.T) {
	dir := t.TempDir()
	write := func(name, context string) string {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://192.0.2.1:6443"}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "x"}
		cfg.Contexts[context] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		path := filepath.Join(dir, name)
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	garbage := filepath.Join(dir, "notes.txt")
	os.WriteFile(garbage, []byte("::: not yaml :::\n\t-"), 0o600)
	for path, ok := range map[string]bool{
		"":                                   true,
		filepath.Join(dir, "new.kubeconfig"): true,
		write("old-demo", demoContext):       true,
		write("mine", "production"):          false,
		garbage:                              false,
	} {
		err := checkKubeconfigOut(path)
		if (err == nil) != ok {
			t.Errorf("checkKubeconfigOut(%q) = %v, want ok=%v", path, err, ok)
		}
	}
	// Through the command line: refused before anything starts.
	r := run(t, "", "demo", "--kubeconfig-out", write("mine2", "production"))
	if r.code != cli.ExitUsage || !strings.Contains(r.err, `context "production"`) || r.out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
}

func TestParseBuilds(t *testing.T) {
	for list, want := range map[string]string{"2019": "2019", "2022": "2022", "2019,2022": "2019 2022", " 2022 , 2019": "2022 2019"} {
		got, err := parseBuilds(list)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("parseBuilds(%q) = %v, %v; want %s", list, got, err, want)
		}
	}
	for _, bad := range []string{"", "2016", "2019,", "2019;2022", "2025"} {
		if _, err := parseBuilds(bad); err == nil || !strings.Contains(err.Error(), "--windows-build") {
			t.Errorf("parseBuilds(%q) = %v, want a usage error naming --windows-build", bad, err)
		}
	}
}

// TestDemoOpenShiftFlavor runs `winnodectl demo --flavor openshift
// --machines 1 --exit-when-ready` in process: the MachineSet's Machine
// becomes a Ready node through the Machine API's real controllers, and the
// "try" lines say how to scale it.
func TestDemoOpenShiftFlavor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane of its own with the Machine API")
	}
	work := t.TempDir()
	r := run(t, "", "demo", "--flavor", "openshift", "--machines", "1", "--exit-when-ready", "--ready-timeout", "5m", "--workdir", work)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	checkNoStackTrace(t, r.out+r.err)
	for _, want := range []string{
		"configured as an OpenShift 4 cluster",
		"created MachineSet openshift-machine-api/winnode-demo-windows with 1 Windows Machine",
		"The simulated Windows host is a Ready node",
		"kubectl -n openshift-machine-api scale machineset winnode-demo-windows --replicas 2",
		"Stopped.",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "patch configmap") {
		t.Errorf("the demo offers to edit a ConfigMap that lists no host:\n%s", r.out)
	}
}

// --flavor and --machines go together; bad values are usage errors.
func TestDemoFlavorFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--machines", "2"},
		{"--flavor", "rancher"},
		{"--flavor", "openshift", "--machines", "0"},
		{"--flavor", "openshift", "--machines", "21"},
		{"--capi-mode", "push"},
		{"--flavor", "openshift", "--capi-mode", "pull"},
		{"--flavor", "capi", "--capi-mode", "ssh"},
	} {
		r := run(t, "", append([]string{"demo"}, args...)...)
		if r.code != cli.ExitUsage || r.out != "" {
			t.Errorf("demo %v: exit %d, stdout %q, stderr %q; want a usage error", args, r.code, r.out, r.err)
		}
	}
}

// TestDemoCAPIFlavor runs `winnodectl demo --flavor capi --machines 1` in
// process (Pull mode, the default) until its "Try" lines, then checks
// what they say: the Machine's Windows node is a Ready node of the workload
// cluster, through the kubeconfig path the demo printed, which is the
// Cluster's <cluster>-kubeconfig Secret; the management cluster
// (--kubeconfig-out) has no Windows node and no WindowsInstance; winnodectl
// status there lists the Pull Machine Ready on that node. Then, in the same
// two clusters, the workers that `--capi-mode push` creates
// (checkCAPIPushWorkers): a second demo run would cost minutes for the
// same world. Then it stops the demo as Ctrl-C does.
func TestDemoCAPIFlavor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes of its own with Cluster API")
	}
	work := t.TempDir()
	mgmtKubeconfig := filepath.Join(work, "mgmt.kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut fixture.SyncBuffer
	done := make(chan int, 1)
	go func() {
		s := cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}
		done <- cli.Execute(ctx, []string{"demo", "--flavor", "capi", "--machines", "1", "--ready-timeout", "6m",
			"--workdir", filepath.Join(work, "demo"), "--kubeconfig-out", mgmtKubeconfig}, s, NewCommand(s))
	}()
	testkit.Eventually(t, 9*time.Minute, "the demo's \"Try\" lines", func() (bool, string) {
		select {
		case code := <-done:
			t.Fatalf("the demo exited %d before its \"Try\" lines\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		default:
		}
		return strings.Contains(out.String(), "The demo runs until Ctrl-C"), "not yet"
	})
	printed := out.String()
	for _, want := range []string{
		"two real Kubernetes control planes",
		"created MachineDeployment capi-windows/windows-workers-md-0 with 1 Windows Machine bootstrapped by WinnodeConfigTemplate windows-workers (mode Pull)",
		"The simulated Windows host is a Ready node",
		"Management cluster (Cluster API, the operator) kubeconfig: " + mgmtKubeconfig,
		"kubectl -n capi-windows scale machinedeployment windows-workers-md-0 --replicas 2",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, printed)
		}
	}
	checkNoStackTrace(t, printed+errOut.String())
	wlPath := checkCAPIClusters(t, printed, mgmtKubeconfig)
	checkCAPIPushWorkers(t, mgmtKubeconfig, wlPath)

	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(out.String(), "Stopped.") {
			t.Errorf("stopped: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the demo did not stop within 2 minutes of its cancel\nstdout:\n%s", out.String())
	}
}

// checkCAPIClusters checks the capi flavor's two clusters against what the
// demo printed: the workload cluster's kubeconfig (the path printed, the
// Cluster's Secret) shows the Machine's Windows node Ready; the management
// cluster's shows none, and no WindowsInstance (Pull mode); winnodectl
// status there, as the "Try" lines run it, shows the Machine Ready on the
// workload cluster's node.
func checkCAPIClusters(t *testing.T, printed, mgmtKubeconfig string) (wlPath string) {
	t.Helper()
	_, rest, ok := strings.Cut(printed, "Workload cluster windows-cluster (the Windows nodes) kubeconfig: ")
	if !ok {
		t.Fatalf("the demo printed no workload cluster kubeconfig:\n%s", printed)
	}
	wlPath, _, _ = strings.Cut(rest, "\n")
	if !strings.Contains(printed, "kubectl --kubeconfig "+wlPath+" get nodes -o wide") {
		t.Errorf("no \"Try\" line lists the workload cluster's nodes with %s:\n%s", wlPath, printed)
	}
	mgmt := demoClient(t, mgmtKubeconfig)
	ctx := context.Background()
	var secret corev1.Secret
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: testenv.CAPINamespace, Name: "windows-cluster-kubeconfig"}, &secret); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(wlPath); err != nil || !bytes.Equal(data, secret.Data["value"]) {
		t.Errorf("the workload kubeconfig %s is not the Secret's value (%v)", wlPath, err)
	}
	wlNodes := windowsNodeNames(t, demoClient(t, wlPath), true)
	if len(wlNodes) != 1 {
		t.Errorf("the workload cluster's Ready Windows nodes: %v, want 1", wlNodes)
	}
	if got := windowsNodeNames(t, mgmt, false); len(got) != 0 {
		t.Errorf("the management cluster has Windows nodes %v; the Machines' join the workload cluster", got)
	}
	var insts winnodev1.WindowsInstanceList
	if err := mgmt.List(ctx, &insts); err != nil || len(insts.Items) != 0 {
		t.Errorf("WindowsInstances of Pull Machines: %d (%v), want none", len(insts.Items), err)
	}
	r := run(t, "", "status", "--kubeconfig", mgmtKubeconfig)
	if r.code != 0 || len(wlNodes) != 1 || !regexp.MustCompile(`capi-windows/windows-workers-md-0-\S+\s+windows-cluster\s+\S+\s+Ready\s+`+regexp.QuoteMeta(wlNodes[0])).MatchString(r.out) {
		t.Errorf("winnodectl status: exit %d, want the Pull Machine Ready on node %v:\n%s%s", r.code, wlNodes, r.out, r.err)
	}
	return wlPath
}

// checkCAPIPushWorkers creates, in the running capi demo's clusters, the
// workers `--capi-mode push` creates (createWorkers in Push mode: no
// image; the operator configures the host over SSH), under other names,
// and waits as the demo waits (its snapshot, allReady) for both Machines,
// the Pull one and the Push one, to be Ready. The Push Machine's
// WindowsInstance names a Ready node of the workload cluster, which the
// management cluster does not have; the management cluster still has no
// Windows node; winnodectl status lists the instance Ready on that node.
func checkCAPIPushWorkers(t *testing.T, mgmtKubeconfig, wlPath string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	defer func() { t.Logf("the Push workers' check took %s", time.Since(start).Round(time.Second)) }()
	cfg, err := clientcmd.BuildConfigFromFlags("", mgmtKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	d := &demo{o: demoOptions{flavor: flavorCAPI, capiMode: capiModePush}, client: demoClient(t, mgmtKubeconfig),
		workloadClient: demoClient(t, wlPath), env: &testenv.Env{Config: cfg}}
	d.say = func(format string, args ...any) { t.Logf(format, args...) }
	if d.mapiClient, err = newCAPIClient(d); err != nil {
		t.Fatal(err)
	}
	push := capiWorkers{mode: capiModePush, deployment: "windows-push-md-0", template: "windows-push", machines: 1}
	if err := d.createWorkers(ctx, demoCluster, push); err != nil {
		t.Fatal(err)
	}
	var hosts []view.HostState
	testkit.Eventually(t, 6*time.Minute, "the demo's Pull and Push Machines Ready", func() (bool, string) {
		if hosts, err = d.snapshot(ctx); err != nil {
			return false, err.Error()
		}
		return allReady(hosts, 2), fmt.Sprintf("%+v", hosts)
	})
	var insts winnodev1.WindowsInstanceList
	if err := d.client.List(ctx, &insts); err != nil || len(insts.Items) != 1 {
		t.Fatalf("WindowsInstances: %d (%v), want the Push Machine's", len(insts.Items), err)
	}
	inst := insts.Items[0]
	wlNodes := windowsNodeNames(t, d.workloadClient, true)
	if inst.Status.NodeName == "" || !slices.Contains(wlNodes, inst.Status.NodeName) {
		t.Errorf("the Push Machine's instance %s names node %q; the workload cluster's Ready Windows nodes are %v", inst.Name, inst.Status.NodeName, wlNodes)
	}
	if got := windowsNodeNames(t, d.client, false); len(got) != 0 {
		t.Errorf("the management cluster has Windows nodes %v; the Push Machine joins the workload cluster", got)
	}
	r := run(t, "", "status", "--kubeconfig", mgmtKubeconfig)
	if r.code != 0 || !regexp.MustCompile(regexp.QuoteMeta(inst.Name)+`\s.*\sReady\s.*\s`+regexp.QuoteMeta(inst.Status.NodeName)+`\s`).MatchString(r.out) {
		t.Errorf("winnodectl status: exit %d, want instance %s Ready:\n%s%s", r.code, inst.Name, r.out, r.err)
	}
}

// The capi flavor's "Try" lines say what winnodectl status lists and what
// happens to a removed Machine, in each mode.
func TestCAPITryLinesFollowTheMode(t *testing.T) {
	for mode, want := range map[string][]string{
		capiModePull: {"each Pull Machine's stage of its join", "Cluster API drains and deletes its Node in the workload cluster"},
		capiModePush: {"each Machine's WindowsInstance", "its host is cleaned before Cluster API deletes its infrastructure"},
	} {
		d := &demo{o: demoOptions{flavor: flavorCAPI, capiMode: mode, machines: 1}}
		got := d.capiTryLines("winnodectl")
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("--capi-mode %s: the \"Try\" lines lack %q:\n%s", mode, w, got)
			}
		}
	}
}

// demoClient is a client through one of the demo's kubeconfigs.
func demoClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	c, err := cli.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// windowsNodeNames lists a cluster's Windows nodes (only the Ready ones
// when ready).
func windowsNodeNames(t *testing.T, c client.Client, ready bool) []string {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(context.Background(), &nodes, client.MatchingLabels{corev1.LabelOSStable: "windows"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range nodes.Items {
		if !ready || view.NodeReady(&nodes.Items[i]) == "Ready" {
			names = append(names, nodes.Items[i].Name)
		}
	}
	return names
}

// TestLibraryLogsGoToOperatorLog: from the moment the demo opens its logs,
// what controller-runtime (envtest's CRD install, through its process-wide
// logger) and client-go (klog) log lands in operator.log, not on the
// terminal; once the demo stops, nowhere.
func TestLibraryLogsGoToOperatorLog(t *testing.T) {
	d := &demo{workdir: t.TempDir()}
	if err := d.openLogs(); err != nil {
		t.Fatal(err)
	}
	ctrllog.Log.WithName("test-env").Info("probe from controller-runtime")
	klog.InfoS("probe from klog")
	routeLibraryLogs(nil)
	ctrllog.Log.WithName("test-env").Info("probe after the demo stopped")
	if err := errors.Join(d.logFile.Close(), d.operatorLog.Close()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(d.workdir, "operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{"probe from controller-runtime", "probe from klog"} {
		if !strings.Contains(got, want) {
			t.Errorf("operator.log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "after the demo stopped") {
		t.Errorf("operator.log got a line after the demo stopped:\n%s", got)
	}
}

// checkNoStackTrace fails when the demo's output holds controller-runtime's
// complaint about its logger or a goroutine stack trace.
func checkNoStackTrace(t *testing.T, output string) {
	t.Helper()
	for _, bad := range []string{"SetLogger", "goroutine ", "Detected at:", ".go:"} {
		if strings.Contains(output, bad) {
			t.Errorf("the demo's output holds %q (a library's log or stack trace on the terminal):\n%s", bad, output)
		}
	}
}

// checkTrySSH runs the demo's "Try" lines that log in to a simulated host
// (winnodectl ssh HOST -- ...) in a shell, as a user pastes them: each
// runs on the host and answers as Windows would.
func checkTrySSH(t *testing.T, printed, bin, kubeconfig string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(printed, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, bin+" logs ") {
			checkTryLogs(t, line, kubeconfig)
			continue
		}
		if !strings.HasPrefix(line, bin+" ssh ") {
			continue
		}
		n++
		cmd := exec.Command("bash", "-c", line)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "is not recognized") {
			t.Errorf("the demo's \"Try\" line %s: %v\n%s", line, err, out)
		}
		if strings.Contains(line, "Get-Service kubelet") && !strings.Contains(string(out), "Running  kubelet ") {
			t.Errorf("the demo's \"Try\" line %s does not show the kubelet Running:\n%s", line, out)
		}
	}
	if n < 2 {
		t.Errorf("the demo printed %d \"Try\" lines running %s ssh, want 2:\n%s", n, bin, printed)
	}
}

// checkTryLogs runs the demo's "Try" line of winnodectl logs: it prints
// the simulated kubelet's log.
func checkTryLogs(t *testing.T, line, kubeconfig string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "kubelet (simulated by winsim)") {
		t.Errorf("the demo's \"Try\" line %s: %v\n%s", line, err, out)
	}
}

// sayWhile says that a build still runs at every interval while it runs,
// and returns its error.
func TestSayWhile(t *testing.T) {
	var out fixture.SyncBuffer
	d := &demo{progressEvery: 10 * time.Millisecond}
	d.say = func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	boom := errors.New("boom")
	err := d.sayWhile("building the simulated hosts' programs", func() error {
		for strings.Count(out.String(), "\n") < 2 {
			time.Sleep(time.Millisecond)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("sayWhile returned %v, want fn's error", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, "building the simulated hosts' programs: still going, ") || !strings.HasSuffix(line, " so far") {
			t.Errorf("progress line %q", line)
		}
	}
}
