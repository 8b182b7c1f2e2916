//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/filestore"
)

// BenchmarkFleet is the operator at fleet scale: winnode-operator, run as
// its own process as in a cluster (leader election on, its defaults
// otherwise), given WINNODE_BENCH_FLEET_INSTANCES WindowsInstances (10000)
// of which WINNODE_BENCH_FLEET_READY (100) are simulated hosts that become
// Ready and the rest addresses where nothing listens (loopback addresses
// whose SSH port refuses connections, as a host that is down does). Once
// every instance is Ready or Failed it watches a window of
// WINNODE_BENCH_STEADY_SECONDS (120) where nothing changes, after
// WINNODE_BENCH_SETTLE_SECONDS (150) for every retry's backoff to reach its
// cap, and prints the
// operator's memory (RSS, from /proc) and its API writes per minute (from
// the API server's audit log), with the leader election Lease's renewals
// apart.
func BenchmarkFleet(b *testing.B) {
	total := benchEnv(b, "WINNODE_BENCH_FLEET_INSTANCES", 10000)
	ready := min(benchEnv(b, "WINNODE_BENCH_FLEET_READY", 100), total)
	window := time.Duration(benchEnv(b, "WINNODE_BENCH_STEADY_SECONDS", 120)) * time.Second
	w := getWorld(b)
	for i := 0; i < b.N; i++ {
		op := w.startOperatorProcess(b)
		names := w.fleetInstances(b, total, ready)
		w.waitSettled(b, op, names, ready, time.Duration(total)*3*time.Second+10*time.Minute)

		// Every unreachable instance's retries reach the backoff's cap
		// (2 minutes, reached after 8 failures) before the window.
		time.Sleep(time.Duration(benchEnv(b, "WINNODE_BENCH_SETTLE_SECONDS", 150)) * time.Second)
		failuresBefore, cpuBefore, reconcilesBefore := op.sshFailures(b), op.cpuSeconds(b), op.reconciles(b)
		since := time.Now()
		time.Sleep(window)
		rss, hwm := op.memory(b)
		failures, cpu := op.sshFailures(b)-failuresBefore, op.cpuSeconds(b)-cpuBefore
		for name, n := range op.reconciles(b) {
			if d := n - reconcilesBefore[name]; d > 0 {
				b.Logf("steady-state reconciles of controller %s: %.0f (%.1f/min)", name, d, d/time.Since(since).Minutes())
			}
		}
		writes, err := w.env.Writes(operatorUser, since)
		if err != nil {
			b.Fatal(err)
		}
		minutes := time.Since(since).Minutes()
		var lease, other int
		kinds := map[string]int{}
		for _, wr := range writes {
			if wr.Resource == "leases" && wr.Name == "winnode-operator-lock" {
				lease++
				continue
			}
			other++
			kinds[wr.Verb+" "+wr.Resource+"/"+wr.Subresource]++
		}
		for k, n := range kinds {
			b.Logf("steady-state API writes: %d× %s", n, k)
		}
		fmt.Printf("fleet %d instances, %d Ready simulated hosts, %d unreachable, window %s\n", total, ready, total-ready, window)
		figure(b, fmt.Sprintf("operator_rss_mib_%d_instances", total), float64(rss)/(1<<20), "MiB")
		figure(b, fmt.Sprintf("operator_peak_rss_mib_%d_instances", total), float64(hwm)/(1<<20), "MiB")
		figure(b, "api_writes_per_min_steady", float64(other)/minutes, "writes/min")
		figure(b, "leader_election_writes_per_min", float64(lease)/minutes, "writes/min")
		figure(b, "operator_cpu_seconds_per_min_steady", cpu/minutes, "s/min")
		figure(b, "unreachable_retries_per_min_steady", failures/minutes, "retries/min")
		figure(b, "unreachable_retries_per_instance_per_min", failures/minutes/float64(max(total-ready, 1)), "retries/min")
		op.stop()
	}
}

// operatorProcess is winnode-operator run as its own process.
type operatorProcess struct {
	cmd     *exec.Cmd
	metrics string // its metrics endpoint
	done    chan struct{}
}

// startOperatorProcess builds and runs cmd/winnode-operator against the
// world's API server, as operatorUser, with the world's payload. It is
// stopped when the benchmark ends.
func (w *world) startOperatorProcess(b *testing.B) *operatorProcess {
	b.Helper()
	bin, err := testenv.BuildBinary("cmd/winnode-operator")
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig, err := w.env.UserKubeconfig(operatorUser, "system:masters")
	if err != nil {
		b.Fatal(err)
	}
	port := freeLoopbackPort(b)
	logPath := filepath.Join(b.TempDir(), "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--namespace="+Namespace, "--payload-dir="+w.payloadDir,
		"--allow-addresses="+prefixList(allowedAddresses()), "--metrics-bind-address=127.0.0.1:"+strconv.Itoa(port),
		"--health-probe-bind-address=0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Ended with the benchmark's process even if that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	op := &operatorProcess{cmd: cmd, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(op.done) }()
	b.Cleanup(op.stop)
	b.Cleanup(func() {
		if b.Failed() {
			data, _ := os.ReadFile(logPath)
			lines := strings.Split(string(data), "\n")
			b.Logf("operator log (last lines):\n%s", strings.Join(lines[max(len(lines)-40, 0):], "\n"))
		}
	})
	return op
}

// stop ends the operator (SIGTERM, as a Pod's deletion does) and waits.
func (op *operatorProcess) stop() {
	select {
	case <-op.done:
		return
	default:
	}
	_ = op.cmd.Process.Signal(os.Interrupt)
	select {
	case <-op.done:
	case <-time.After(30 * time.Second):
		_ = op.cmd.Process.Kill()
		<-op.done
	}
}

// memory is the process's resident set and its peak, in bytes
// (/proc/<pid>/status VmRSS and VmHWM).
func (op *operatorProcess) memory(b *testing.B) (int64, int64) {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", op.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("the operator's memory: %v", err)
	}
	defer f.Close()
	var rss, hwm int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[2] == "kB" {
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			switch fields[0] {
			case "VmRSS:":
				rss = n << 10
			case "VmHWM:":
				hwm = n << 10
			}
		}
	}
	return rss, hwm
}

// cpuSeconds is the CPU time the process has used (/proc/<pid>/stat utime
// and stime, in clock ticks of 1/100 s, as on every Linux this runs on).
func (op *operatorProcess) cpuSeconds(b *testing.B) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", op.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("the operator's CPU time: %v", err)
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100
}

// sshFailures is the operator's winnode_ssh_failures_total, all reasons.
func (op *operatorProcess) sshFailures(b *testing.B) float64 {
	b.Helper()
	sum := 0.0
	for _, v := range op.series(b, "winnode_ssh_failures_total{") {
		sum += v
	}
	return sum
}

// reconciles is controller-runtime's controller_runtime_reconcile_total
// of each controller, all results: what the operator did in the window.
func (op *operatorProcess) reconciles(b *testing.B) map[string]float64 {
	b.Helper()
	out := map[string]float64{}
	for labels, v := range op.series(b, "controller_runtime_reconcile_total{") {
		_, rest, _ := strings.Cut(labels, `controller="`)
		name, _, _ := strings.Cut(rest, `"`)
		out[name] += v
	}
	return out
}

// series reads the operator's metrics: each series whose line starts with
// prefix (name and "{"), by its labels, with its value.
func (op *operatorProcess) series(b *testing.B, prefix string) map[string]float64 {
	b.Helper()
	res, err := http.Get(op.metrics)
	if err != nil {
		b.Fatalf("the operator's metrics: %v", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, prefix) {
			fields := strings.Fields(line)
			v, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
			out[strings.Join(fields[:len(fields)-1], " ")] = v
		}
	}
	return out
}

// fleetInstances starts ready simulated hosts and creates total
// instances: one per host, the rest at loopback addresses (127.1.x.y) whose
// SSH port refuses connections.
//
// The hosts share one file store (winsim Options.Store): each configured
// host holds about 400 MB of programs, the same bytes on every host, and
// 100 hosts with copies of their own took 40 GB of this machine's disk.
// Sharing them keeps what the fleet measures unchanged: each host is still
// sent and decodes the whole payload as any host is (the operator's work,
// its memory while settling, the wire bytes), and runs its own processes;
// only the copy on this machine's disk is one, which a host cannot tell
// (filestore's package comment).
func (w *world) fleetInstances(b *testing.B, total, ready int) []string {
	b.Helper()
	store, err := filestore.New(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, total)
	for i := range total {
		names[i] = fmt.Sprintf("fleet-%04d", i)
		if i < ready {
			w.instanceFor(b, names[i], w.newHostTuned(b, true, func(o *winsim.Options) { o.Store = store }))
			continue
		}
		inst := builder.Instance(names[i]).Host(fmt.Sprintf("127.1.%d.%d", i/250, i%250+1), "Administrator").
			Port(int32(refusedPort)).Manual().Build()
		if err := w.client.Create(context.Background(), inst); err != nil {
			b.Fatalf("creating WindowsInstance %s: %v", names[i], err)
		}
		b.Cleanup(func() { w.forget(inst.Name) })
	}
	return names
}

// refusedPort is where no simulated host listens: port 1 (tcpmux), which
// nothing on these machines serves, refuses at once.
const refusedPort = 1

// waitSettled waits until the first ready instances are Ready and the rest
// Failed. An operator that exits meanwhile (on a machine too loaded for
// the API server to answer its Lease renewals in time, it loses the
// leadership and exits, as in a cluster) ends the benchmark at once.
func (w *world) waitSettled(b *testing.B, op *operatorProcess, names []string, ready int, timeout time.Duration) {
	b.Helper()
	testkit.Eventually(b, timeout, "every instance to be Ready or Failed", func() (bool, string) {
		select {
		case <-op.done:
			b.Fatalf("winnode-operator exited before the fleet settled (its log's last lines follow)")
		default:
		}
		var list winnodev1.WindowsInstanceList
		if err := w.client.List(context.Background(), &list); err != nil {
			return false, err.Error()
		}
		phase := map[string]winnodev1.Phase{}
		for _, inst := range list.Items {
			phase[inst.Name] = inst.Status.Phase
		}
		readyN, failedN := 0, 0
		for i, name := range names {
			switch {
			case i < ready && phase[name] == winnodev1.PhaseReady:
				readyN++
			case i >= ready && phase[name] == winnodev1.PhaseFailed:
				failedN++
			}
		}
		return readyN == ready && failedN == len(names)-ready, fmt.Sprintf("%d of %d Ready, %d of %d Failed", readyN, ready, failedN, len(names)-ready)
	})
}

// freeLoopbackPort asks the kernel for a free loopback port.
func freeLoopbackPort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// prefixList is prefixes as a flag takes them: comma-separated.
func prefixList(prefixes []netip.Prefix) string {
	s := make([]string, len(prefixes))
	for i, p := range prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
