package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// Benchmark settings, from the environment so that the benchmarks also run
// small:
//
//	WINNODE_BENCH_PADDING_MB  250   the simulated payload's size, when `make payload` has not built the real one
//	WINNODE_BENCH_HOSTS       20    hosts configured together (and upgraded)
//	WINNODE_BENCH_LINKS_MBIT  1000,100  each simulated host's link, one run per link (0 = unshaped)
//	WINNODE_BENCH_MAX_UNAVAILABLE 5  the rolling upgrade's --max-unavailable
func benchEnv(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a whole number", name, v)
	}
	return n
}

// benchLinks is WINNODE_BENCH_LINKS_MBIT (WINNODE_BENCH_LINK_MBIT, one
// link, as before, is still read).
func benchLinks(b *testing.B) []int {
	v := os.Getenv("WINNODE_BENCH_LINKS_MBIT")
	if v == "" {
		v = os.Getenv("WINNODE_BENCH_LINK_MBIT")
	}
	if v == "" {
		v = "1000,100"
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			b.Fatalf("WINNODE_BENCH_LINKS_MBIT=%q: want whole numbers of Mbit/s separated by commas", v)
		}
		out = append(out, n)
	}
	return out
}

// figure prints one figure as `name value unit` (what make bench shows;
// a count has no unit: `name value`) and reports it to the benchmark.
func figure(b *testing.B, name string, value float64, unit string) {
	b.Helper()
	v := fmt.Sprintf("%.2f", value)
	if value == float64(int64(value)) {
		v = strconv.FormatInt(int64(value), 10)
	}
	fmt.Println(strings.TrimSpace(name + " " + v + " " + unit))
	b.ReportMetric(value, name)
}

// BenchmarkTimeToReady measures on simulated hosts with shaped links, for
// each link: the bytes sent to a host, the time from a WindowsInstance's
// creation to Ready for one host and for many configured together (bounded
// by the operator's default concurrency), each beside its floor (the same
// bytes pushed to the same hosts by a bare SFTP client), and beside the
// floor that adds to it a bare kubelet's join (bench_joinfloor_test.go),
// and the SSH
// sessions a configuration opens. On the first link it then measures a
// no-op check of every Ready host (bytes, SSH execs and sessions, API
// writes) and a rolling upgrade of them all. It is not part of `make test`
// (`make bench`).
func BenchmarkTimeToReady(b *testing.B) {
	padMB := benchEnv(b, "WINNODE_BENCH_PADDING_MB", 250)
	many := benchEnv(b, "WINNODE_BENCH_HOSTS", 20)
	maxUnavailable := benchEnv(b, "WINNODE_BENCH_MAX_UNAVAILABLE", 5)
	links := benchLinks(b)
	w := getWorld(b)
	p := newBenchPayload(b, w, padMB)
	fmt.Printf("payload %s %s\n", p.kind, p.source)
	figure(b, "payload_bytes", float64(p.size()), "bytes")
	for i := 0; i < b.N; i++ {
		for li, mbit := range links {
			fmt.Printf("link_mbit_per_s %d Mbit/s\n", mbit)
			one, hosts, names := w.benchLink(b, p, mbit, many)
			if li > 0 {
				continue
			}
			w.benchNoop(b, p, hosts, names)
			w.benchRollingUpgrade(b, p, hosts, names, maxUnavailable, one)
		}
	}
}

// benchLink is the figures of one link; it returns the time to Ready of
// one host, and the many hosts and their instances.
func (w *world) benchLink(b *testing.B, p *benchPayload, mbit, many int) (time.Duration, []*winsim.Host, []string) {
	label := fmt.Sprintf("l%d", mbit)
	oneHosts := w.benchHosts(b, 1, mbit)
	floor1 := pushFloor(b, w, p, oneHosts)
	join1 := joinFloor(b, w, 1)
	one, oneNames, c1, _ := w.configureAll(b, p, oneHosts, label+"-one")
	// Out of the way: the checks and the upgrade below are of the many.
	w.forget(oneNames[0])
	_ = oneHosts[0].Close()
	hosts := w.benchHosts(b, many, mbit)
	floorN := pushFloor(b, w, p, hosts)
	joinN := joinFloor(b, w, many)
	all, names, cN, trN := w.configureAll(b, p, hosts, label+"-many")

	var wire int64
	for _, c := range cN {
		wire += c.BytesIn
	}
	perHost := float64(wire) / float64(len(cN))
	figure(b, "wire_bytes_per_host", perHost, "bytes")
	figure(b, "ratio_wire_bytes_to_payload", perHost/float64(p.size()), "x")
	figure(b, "ssh_sessions_per_configuration", float64(c1[0].Sessions), "")
	figure(b, "ssh_execs_per_configuration", float64(c1[0].Execs), "")
	figure(b, "time_to_ready_1_host", one.Seconds(), "s")
	figure(b, "floor_1_host", floor1.Seconds(), "s")
	figure(b, "ratio_1_host_to_floor", one.Seconds()/floor1.Seconds(), "x")
	figure(b, fmt.Sprintf("time_to_ready_%d_hosts", many), all.Seconds(), "s")
	figure(b, fmt.Sprintf("floor_%d_hosts", many), floorN.Seconds(), "s")
	figure(b, fmt.Sprintf("ratio_%d_hosts_to_floor", many), all.Seconds()/floorN.Seconds(), "x")
	figure(b, fmt.Sprintf("ratio_%d_hosts_to_1_host", many), all.Seconds()/one.Seconds(), "x")
	joinFloorFigures(b, many, one, all, floor1, floorN, join1, joinN)
	figure(b, "applies_per_first_configuration", trN.steps.applies(names), "")
	trN.steps.report(b, names, trN.ready)
	cpuTraceFigures(b, p, many, all, trN.cpuSelf, trN.cpuChildren, perHost)
	return one, hosts, names
}

// benchHosts starts n simulated hosts on links of mbit Mbit/s.
func (w *world) benchHosts(b *testing.B, n, mbit int) []*winsim.Host {
	hosts := make([]*winsim.Host, n)
	for i := range hosts {
		hosts[i] = w.newHost(b)
		if mbit > 0 {
			hosts[i].SetLink(winsim.LinkOptions{BytesPerSecond: mbit * 1_000_000 / 8})
		}
	}
	return hosts
}

// configureAll creates an instance for every host at once and waits until
// all are Ready; it returns the time that took, the instances, each
// host's SSH counters from the creation to its Ready, and the run's trace.
func (w *world) configureAll(b *testing.B, p *benchPayload, hosts []*winsim.Host, label string) (time.Duration, []string, []winsim.Counters, *runTrace) {
	names := make([]string, len(hosts))
	for i := range hosts {
		names[i] = fmt.Sprintf("bench-%s-%d", label, i)
	}
	tr := &runTrace{steps: newStepTrace(), ready: map[string]time.Duration{}}
	op := w.startOperator(b, operatorOptions{payloadDir: p.dir, payload: p.m, afterStep: tr.steps.afterStep, maxConcurrent: -1})
	defer op.stop()
	op.waitStarted(b)
	before := hostCounters(hosts)
	self, children := cpuTimes()
	tr.steps.begin()
	start := time.Now()
	for i, h := range hosts {
		w.instanceFor(b, names[i], h)
		tr.steps.createdNow(names[i])
	}
	counts := make([]winsim.Counters, len(hosts))
	for i, name := range names {
		w.waitReady(b, name, 30*time.Minute)
		counts[i] = hosts[i].Counters().Sub(before[i])
		tr.ready[name] = time.Since(start)
	}
	elapsed := time.Since(start)
	s, c := cpuTimes()
	tr.cpuSelf, tr.cpuChildren = s-self, c-children
	return elapsed, names, counts, tr
}

// runTrace is what configureAll saw of a run: each instance's steps, when
// it was seen Ready, and the CPU the run used.
type runTrace struct {
	steps                *stepTrace
	ready                map[string]time.Duration
	cpuSelf, cpuChildren time.Duration
}

// benchNoop has a new operator check every Ready host once: what it moves
// over SSH and writes to the API server.
func (w *world) benchNoop(b *testing.B, p *benchPayload, hosts []*winsim.Host, names []string) {
	before := hostCounters(hosts)
	since := time.Now()
	op := w.startOperator(b, operatorOptions{payloadDir: p.dir, payload: p.m})
	testkit.Eventually(b, 5*time.Minute, "the Ready hosts to be checked", func() (bool, string) {
		return op.checked.Load() >= int64(len(names)), fmt.Sprintf("%d of %d checked", op.checked.Load(), len(names))
	})
	uploaded, checks := op.uploaded.Load(), op.checked.Load()
	op.stop()
	var sum winsim.Counters
	for i, c := range hostCounters(hosts) {
		sum = sum.Add(c.Sub(before[i]))
	}
	for _, name := range names {
		if inst := w.get(b, name); inst.Status.Phase != winnodev1.PhaseReady {
			b.Errorf("%s is %s after the no-op check", name, inst.Status.Phase)
		}
	}
	writes, err := w.env.Writes(operatorUser, since)
	if err != nil {
		b.Fatal(err)
	}
	for _, wr := range writes {
		b.Logf("API write during the no-op check: %s", wr)
	}
	n := len(names)
	figure(b, fmt.Sprintf("noop_reconcile_bytes_%d_hosts", n), float64(uploaded), "bytes")
	figure(b, "ssh_execs_per_noop_check", float64(sum.Execs)/float64(checks), "")
	figure(b, "ssh_sessions_per_noop_check", float64(sum.Sessions)/float64(checks), "")
	figure(b, "ssh_wire_bytes_per_noop_check", float64(sum.BytesIn+sum.BytesOut)/float64(checks), "bytes")
	figure(b, fmt.Sprintf("api_writes_noop_check_%d_hosts", n), float64(len(writes)), "writes")
}

// benchRollingUpgrade gives the Ready hosts a new kubelet and kube-proxy
// (their services restart) with --max-unavailable maxUnavailable, and times
// the rollout until every host runs the new kubelet and is Ready.
func (w *world) benchRollingUpgrade(b *testing.B, p *benchPayload, hosts []*winsim.Host, names []string, maxUnavailable int, one time.Duration) {
	up := p.upgraded(b, "bench-upgrade")
	kubelets := make([]int, len(hosts))
	for i, h := range hosts {
		kubelets[i] = servicePIDs(b, h)["kubelet"]
	}
	before := hostCounters(hosts)
	start := time.Now()
	op := w.startOperator(b, operatorOptions{payloadDir: up.dir, payload: up.m, maxUnavailable: maxUnavailable, maxConcurrent: -1})
	for i, name := range names {
		testkit.Eventually(b, 30*time.Minute, name+" to run the new kubelet", func() (bool, string) {
			inst := w.get(b, name)
			pid := servicePIDs(b, hosts[i])["kubelet"]
			return inst.Status.Phase == winnodev1.PhaseReady && pid != 0 && pid != kubelets[i],
				fmt.Sprintf("phase %s step %s kubelet pid %d (was %d) lastError %q", inst.Status.Phase, inst.Status.Step, pid, kubelets[i], inst.Status.LastError)
		})
	}
	elapsed := time.Since(start)
	op.stop()
	var sum winsim.Counters
	for i, c := range hostCounters(hosts) {
		sum = sum.Add(c.Sub(before[i]))
	}
	writes, err := w.env.Writes(operatorUser, start)
	if err != nil {
		b.Fatal(err)
	}
	statusWrites := 0
	for _, wr := range writes {
		if wr.Resource == "windowsinstances" && wr.Subresource == "status" {
			statusWrites++
		}
	}
	n := float64(len(names))
	figure(b, fmt.Sprintf("rolling_upgrade_%d_hosts", len(names)), elapsed.Seconds(), "s")
	figure(b, "rolling_upgrade_ssh_connections_per_host", float64(sum.Connections)/n, "")
	figure(b, "rolling_upgrade_ssh_execs_per_host", float64(sum.Execs)/n, "")
	figure(b, "rolling_upgrade_api_writes_per_host", float64(len(writes))/n, "writes")
	figure(b, "rolling_upgrade_status_writes_per_host", float64(statusWrites)/n, "writes")
	figure(b, "max_unavailable", float64(maxUnavailable), "")
	figure(b, fmt.Sprintf("ratio_rolling_upgrade_%d_hosts_to_1_host", len(names)), elapsed.Seconds()/one.Seconds(), "x")
}
