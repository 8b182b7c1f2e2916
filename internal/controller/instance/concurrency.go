package instance

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// How many hosts are configured at once is decided from the machine the
// operator runs on (ConfigurationsAtOnce), not fixed: what a configuration
// costs the operator is CPU (the SSH encryption of the bytes it sends) and
// memory (the bytes it keeps in flight), and both scale with the machine.
// --max-concurrent-configurations, when set, caps the result.

// Machine is what bounds the configurations at once: the cores the
// operator may use and the memory it may fill.
type Machine struct {
	// CPUs is the cores the operator's goroutines run on
	// (runtime.GOMAXPROCS, which since Go 1.25 follows the container's
	// CPU limit).
	CPUs int
	// MemoryLimit is the bytes the operator may use: GOMEMLIMIT when set,
	// else the container's memory limit (cgroup v2 memory.max), else the
	// machine's memory; 0 when none of them could be read.
	MemoryLimit int64
}

const (
	// HostsPerCPU is how many configurations one core carries at once. A
	// configuration keeps the operator's core busy only while it encrypts
	// the bytes it sends (about 100 MB of compressed payload: a tenth of a
	// second of AES-GCM on a core with AES instructions, more on a loaded
	// one); the rest of its time, the host installs and starts services
	// and the kubelet joins (3 s and more, docs/performance.md), with the
	// operator's worker waiting on the host. Sixteen at once keep a core
	// below full even if they all sent at the same moment on 1 Gbit/s
	// links (16 × 125 MB/s is 2 GB/s, about what one core encrypts).
	HostsPerCPU = 16
	// BytesInFlightPerConfiguration is what a configuration's transfer
	// may hold in the operator's memory, with room to spare. The payload
	// travels on the standard input of the agent's `receive`
	// (host.SyncPipelined): at most the SSH channel's window is sent and
	// not yet taken by the host, 2 MiB (the window the host's server
	// grants: OpenSSH's, Windows' included, is 64 packets of 32 KiB, as is
	// x/crypto/ssh's that winsim runs), held in the connection's socket
	// buffer, which a container's memory limit counts; the bytes go from
	// the payload file to the channel through two 32 KiB buffers (io.Copy's
	// in host.writeFrame, and the SSH session's copy of its stdin). The
	// stream's 1 MiB reads (copyBuffer in internal/agent/receive.go) are
	// the agent's, on the host, and drain the window as fast as the host
	// writes. Beside the stream, the agent's answer is read up to
	// host.DefaultMaxOutput (1 MiB); the agent's own upload before the
	// stream goes over SFTP (64 writes of 32 KiB in flight, 2 MiB), not at
	// the same time. About 3.1 MiB at most; the rest of the 5 MiB is for
	// the SSH packets being encrypted and the garbage collector's
	// headroom.
	BytesInFlightPerConfiguration = 5 << 20
	// memoryShare is the part of MemoryLimit the transfers may fill: the
	// rest is the operator's caches (a 10,000-instance fleet's objects)
	// and the Go runtime's headroom.
	memoryShare = 4
)

// ConfigurationsAtOnce is how many hosts the operator configures at once:
// HostsPerCPU per core, and no more than a quarter of its memory holds of
// the transfers' bytes in flight, capped by maxCap when it is set (> 0,
// --max-concurrent-configurations); at least one. It also says what
// decided it, for the operator's log.
func ConfigurationsAtOnce(m Machine, maxCap int) (int, string) {
	cpus := max(m.CPUs, 1)
	n := cpus * HostsPerCPU
	why := fmt.Sprintf("%d per core on %d cores", HostsPerCPU, cpus)
	if m.MemoryLimit > 0 {
		byMemory := int(min(m.MemoryLimit/memoryShare/BytesInFlightPerConfiguration, math.MaxInt32))
		if byMemory < n {
			n = max(byMemory, 1)
			why = fmt.Sprintf("a quarter of %d MiB of memory holds the bytes in flight of %d (%d MiB each)",
				m.MemoryLimit>>20, n, BytesInFlightPerConfiguration>>20)
		}
	}
	if maxCap > 0 && maxCap < n {
		return maxCap, fmt.Sprintf("--max-concurrent-configurations %d (the machine allows %d: %s)", maxCap, n, why)
	}
	return n, why
}

// ThisMachine reads the operator's cores and memory limit.
func ThisMachine() Machine {
	return Machine{CPUs: runtime.GOMAXPROCS(0), MemoryLimit: memoryLimit()}
}

// memoryLimit is GOMEMLIMIT when set, else cgroup v2's memory.max, else
// /proc/meminfo's MemTotal; 0 when none is known.
func memoryLimit() int64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l
	}
	if data, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if l, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && l > 0 {
			return l // "max" (no limit) does not parse: fall through
		}
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// "MemTotal:       24532512 kB"
		fields := strings.Fields(s.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
