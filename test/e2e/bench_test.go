package e2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// Benchmark settings, from the environment so that the benchmark also runs
// small: WINNODE_BENCH_PADDING_MB (default 250: the payload is padded to
// about that size), WINNODE_BENCH_HOSTS (default 20) and
// WINNODE_BENCH_LINK_MBIT (default 1000: each simulated host's link).
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

// BenchmarkTimeToReady measures, on simulated hosts with shaped links and a
// padded payload: the time from a WindowsInstance's creation to Ready for
// one host, and for many hosts configured together (bounded by the
// operator's default concurrency); their ratio; and the bytes a no-op
// reconcile of every Ready host moves. Each figure is printed on its own
// line as `name value unit`. It is not part of `make test` (`make bench`).
func BenchmarkTimeToReady(b *testing.B) {
	padMB := benchEnv(b, "WINNODE_BENCH_PADDING_MB", 250)
	many := benchEnv(b, "WINNODE_BENCH_HOSTS", 20)
	mbit := benchEnv(b, "WINNODE_BENCH_LINK_MBIT", 1000)
	w := getWorld(b)

	// The payload: the simulated binaries plus padding up to padMB.
	dir := b.TempDir()
	base := int64(0)
	for _, f := range w.payload.Files {
		base += f.Size
	}
	padding := max(int64(padMB)<<20-base, 0)
	m, err := simpayload.Build(dir, simpayload.Options{AgentBinary: w.agent, StandinBinary: w.standin, PaddingBytes: padding, PaddingSeed: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	total := int64(0)
	for _, f := range m.Files {
		total += f.Size
	}

	run := func(n int, label string) (time.Duration, []string, []*winsim.Host) {
		hosts := make([]*winsim.Host, n)
		names := make([]string, n)
		for i := range hosts {
			hosts[i] = w.newHost(b)
			if mbit > 0 {
				hosts[i].SetLink(winsim.LinkOptions{BytesPerSecond: mbit * 1_000_000 / 8})
			}
			names[i] = fmt.Sprintf("bench-%s-%d", label, i)
		}
		op := w.startOperator(b, operatorOptions{payloadDir: dir, payload: m})
		start := time.Now()
		for i, h := range hosts {
			w.instanceFor(b, names[i], h)
		}
		for _, name := range names {
			w.waitReady(b, name, 30*time.Minute)
		}
		elapsed := time.Since(start)
		op.stop()
		return elapsed, names, hosts
	}

	for i := 0; i < b.N; i++ {
		one, _, _ := run(1, "one")
		all, names, _ := run(many, "many")

		// A no-op reconcile of every Ready host of the second run.
		op := w.startOperator(b, operatorOptions{payloadDir: dir, payload: m})
		eventually(b, 5*time.Minute, "the Ready hosts to be checked", func() (bool, string) {
			return op.checked.Load() >= int64(len(names)), fmt.Sprintf("%d of %d checked", op.checked.Load(), len(names))
		})
		noop := op.uploaded.Load()
		op.stop()
		for _, name := range names {
			if inst := w.get(b, name); inst.Status.Phase != winnodev1.PhaseReady {
				b.Errorf("%s is %s after the no-op reconcile", name, inst.Status.Phase)
			}
		}

		ratio := all.Seconds() / one.Seconds()
		fmt.Printf("payload_bytes %d bytes\n", total)
		fmt.Printf("link_mbit_per_s %d Mbit/s\n", mbit)
		fmt.Printf("time_to_ready_1_host %.2f s\n", one.Seconds())
		fmt.Printf("time_to_ready_%d_hosts %.2f s\n", many, all.Seconds())
		fmt.Printf("ratio_%d_hosts_to_1_host %.2f x\n", many, ratio)
		fmt.Printf("noop_reconcile_bytes_%d_hosts %d bytes\n", many, noop)
		b.ReportMetric(one.Seconds(), "s-1host")
		b.ReportMetric(all.Seconds(), fmt.Sprintf("s-%dhosts", many))
		b.ReportMetric(ratio, "ratio")
		b.ReportMetric(float64(noop), "noop-bytes")
	}
}
