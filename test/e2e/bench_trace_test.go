package e2e

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
)

// Where the time of many hosts configured together goes: each instance's
// steps as the Configurer records them (AfterStep), the wait for a
// configuration worker (from the instance's creation to its first step),
// and the CPU the run used, beside what each kind of work costs one host
// on this machine (measured in the same run: the SSH cipher over the bytes
// sent, decoding and hashing the payload).

// stepTrace records every instance's steps, with their time since start.
type stepTrace struct {
	mu      sync.Mutex
	start   time.Time
	created map[string]time.Duration
	steps   map[string][]stepAt
	print   bool // WINNODE_BENCH_TRACE: print each step as it starts
}

type stepAt struct {
	step string
	at   time.Duration
}

func newStepTrace() *stepTrace {
	return &stepTrace{start: time.Now(), created: map[string]time.Duration{}, steps: map[string][]stepAt{},
		print: os.Getenv("WINNODE_BENCH_TRACE") != ""}
}

// begin restarts the clock (the instances are about to be created).
func (s *stepTrace) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = time.Now()
}

// createdNow records an instance's creation.
func (s *stepTrace) createdNow(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created[name] = time.Since(s.start)
}

// afterStep is the Configurer's AfterStep hook.
func (s *stepTrace) afterStep(_ *operator, inst *winnodev1.WindowsInstance, step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := time.Since(s.start)
	steps := s.steps[inst.Name]
	// join is recorded again at every look while the Node is awaited:
	// one step, as long as it lasts.
	if n := len(steps); n > 0 && steps[n-1].step == step && step == configure.StepJoin {
		return
	}
	s.steps[inst.Name] = append(steps, stepAt{step, at})
	if s.print {
		fmt.Printf("trace %s %s %.2fs", inst.Name, step, at.Seconds())
		if inst.Status.LastError != "" {
			fmt.Printf(" (phase %s, last error: %s)", inst.Status.Phase, inst.Status.LastError)
		}
		fmt.Println()
	}
}

// applies is the mean number of applies per instance (step apply).
func (s *stepTrace) applies(names []string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, name := range names {
		for _, st := range s.steps[name] {
			if st.step == configure.StepApply {
				n++
			}
		}
	}
	return float64(n) / float64(len(names))
}

// report prints the mean and longest time per step over the instances
// (each step lasting until the next starts, the last until ready), and
// the wait for a worker.
func (s *stepTrace) report(b *testing.B, names []string, ready map[string]time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(names)
	sum, longest := map[string]time.Duration{}, map[string]time.Duration{}
	var order []string
	var waitSum, waitMax time.Duration
	for _, name := range names {
		steps := s.steps[name]
		if len(steps) == 0 {
			continue
		}
		wait := steps[0].at - s.created[name]
		waitSum, waitMax = waitSum+wait, max(waitMax, wait)
		for i, st := range steps {
			if st.step == configure.StepChecked {
				break // the host is Ready: a check, not the configuration
			}
			end := ready[name]
			if i+1 < len(steps) {
				end = steps[i+1].at
			}
			key := st.step
			for j := range i {
				if steps[j].step == st.step {
					// A step seen again: the looks at the Node
					// (join, finish) while it is not Ready, or a
					// pass that started over.
					key = st.step + "_again"
				}
			}
			if !slices.Contains(order, key) {
				order = append(order, key)
			}
			sum[key] += end - st.at
			longest[key] = max(longest[key], end-st.at)
		}
	}
	figure(b, fmt.Sprintf("slot_wait_seconds_mean_%d_hosts", n), waitSum.Seconds()/float64(n), "s")
	figure(b, fmt.Sprintf("slot_wait_seconds_max_%d_hosts", n), waitMax.Seconds(), "s")
	for _, key := range order {
		fmt.Printf("trace_step %s mean %.2f s max %.2f s (%d hosts)\n", key, sum[key].Seconds()/float64(n), longest[key].Seconds(), n)
	}
}

// cpuTimes is the CPU time of this process and of its children that ended
// (the agents the simulated hosts ran, which decode and hash the payload).
func cpuTimes() (self, children time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return self, children
}

// threadCPU runs f on one locked OS thread and returns the CPU time that
// thread spent in it (RUSAGE_THREAD): the cost of f whatever else loads
// the machine.
func threadCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	var a, z syscall.Rusage
	_ = syscall.Getrusage(rusageThread, &a)
	f()
	_ = syscall.Getrusage(rusageThread, &z)
	return time.Duration(z.Utime.Nano() + z.Stime.Nano() - a.Utime.Nano() - a.Stime.Nano())
}

// hostCPUCosts measures what each kind of a host's work costs one core of
// this machine: sealing and opening wireBytes with AES-128-GCM (the cipher
// golang.org/x/crypto/ssh prefers where the CPU has AES instructions: the
// operator encrypts, the host decrypts), decoding the payload's compressed
// files (one decoder goroutine) and hashing their content (SHA-256).
func hostCPUCosts(b *testing.B, p *benchPayload, wireBytes int64) (crypto, decode, hash time.Duration) {
	b.Helper()
	block, _ := aes.NewCipher(make([]byte, 16))
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, gcm.NonceSize())
	packet := make([]byte, 32<<10) // an SFTP write's data
	sealed := gcm.Seal(nil, nonce, packet, nil)
	packets := int(wireBytes / int64(len(packet)))
	crypto = threadCPU(func() {
		out := make([]byte, 0, len(sealed))
		for range packets {
			out = gcm.Seal(out[:0], nonce, packet, nil)
			if _, err := gcm.Open(packet[:0], nonce, sealed, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	var content int64
	seen := map[string]bool{}
	for _, f := range p.m.Files {
		if seen[f.SHA256] || f.EncodedName() == "" {
			continue
		}
		seen[f.SHA256] = true
		content += f.Size
		data, err := os.ReadFile(filepath.Join(p.dir, f.EncodedName()))
		if err != nil {
			b.Fatal(err)
		}
		decode += threadCPU(func() {
			dec, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1))
			if err != nil {
				b.Fatal(err)
			}
			defer dec.Close()
			if _, err := io.Copy(io.Discard, dec); err != nil {
				b.Fatalf("decoding %s: %v", f.EncodedName(), err)
			}
		})
	}
	chunk := make([]byte, 1<<20)
	hash = threadCPU(func() {
		h := sha256.New()
		for left := content; left > 0; left -= int64(len(chunk)) {
			h.Write(chunk[:min(left, int64(len(chunk)))])
		}
		_ = h.Sum(nil)
	})
	return crypto, decode, hash
}

// cpuTraceFigures prints the run's CPU beside its wall time on this
// machine's cores, and what each host's work costs a core.
func cpuTraceFigures(b *testing.B, p *benchPayload, many int, wall, self, children time.Duration, wirePerHost float64) {
	crypto, decode, hash := hostCPUCosts(b, p, int64(wirePerHost))
	cores := runtime.NumCPU()
	fmt.Printf("machine %d cores, load average %s\n", cores, loadAverage())
	figure(b, fmt.Sprintf("cpu_seconds_operator_and_ssh_servers_%d_hosts", many), self.Seconds(), "s")
	figure(b, fmt.Sprintf("cpu_seconds_agents_%d_hosts", many), children.Seconds(), "s")
	figure(b, fmt.Sprintf("cpu_share_of_%d_cores_%d_hosts", cores, many), (self+children).Seconds()/(wall.Seconds()*float64(cores)), "x")
	figure(b, "cpu_ssh_cipher_seconds_per_host", crypto.Seconds(), "s")
	figure(b, "cpu_decode_seconds_per_host", decode.Seconds(), "s")
	figure(b, "cpu_hash_seconds_per_host", hash.Seconds(), "s")
	perHost := crypto + decode + hash
	fmt.Printf("trace_cpu %d hosts × (cipher %.2f + decode %.2f + hash %.2f s) = %.1f CPU-seconds, %.1f s on %d cores at best; the run took %.1f s\n",
		many, crypto.Seconds(), decode.Seconds(), hash.Seconds(), float64(many)*perHost.Seconds(),
		float64(many)*perHost.Seconds()/float64(cores), cores, wall.Seconds())
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
