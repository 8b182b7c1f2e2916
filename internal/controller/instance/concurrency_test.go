package instance

import (
	"strings"
	"testing"
)

func TestConfigurationsAtOnce(t *testing.T) {
	const gib = int64(1) << 30
	cases := []struct {
		name    string
		m       Machine
		maxCap  int
		want    int
		wantWhy string
	}{
		{"two cores, plenty of memory", Machine{CPUs: 2, MemoryLimit: 23 * gib}, 0, 32, "16 per core on 2 cores"},
		{"eight cores", Machine{CPUs: 8, MemoryLimit: 64 * gib}, 0, 128, "16 per core on 8 cores"},
		{"memory unknown: cores alone", Machine{CPUs: 2}, 0, 32, "16 per core"},
		{"no core read counts as one", Machine{}, 0, 16, "16 per core on 1 cores"},
		// 128 MiB / 4 / 5 MiB = 6 transfers in flight.
		{"a small memory limit bounds the bytes in flight", Machine{CPUs: 4, MemoryLimit: 128 << 20}, 0, 6, "a quarter of 128 MiB"},
		{"a tiny memory limit still configures one", Machine{CPUs: 4, MemoryLimit: 1 << 20}, 0, 1, "a quarter of 1 MiB"},
		{"the cap below the machine's bound", Machine{CPUs: 2, MemoryLimit: 23 * gib}, 10, 10, "--max-concurrent-configurations 10 (the machine allows 32"},
		{"the cap above the machine's bound does not raise it", Machine{CPUs: 2, MemoryLimit: 23 * gib}, 100, 32, "16 per core"},
		{"a negative cap is no cap", Machine{CPUs: 1, MemoryLimit: 23 * gib}, -1, 16, "16 per core"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := ConfigurationsAtOnce(tc.m, tc.maxCap)
			if got != tc.want || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("ConfigurationsAtOnce(%+v, %d) = %d, %q; want %d, %q", tc.m, tc.maxCap, got, why, tc.want, tc.wantWhy)
			}
		})
	}
}

func TestThisMachine(t *testing.T) {
	m := ThisMachine()
	if m.CPUs < 1 {
		t.Errorf("ThisMachine().CPUs = %d", m.CPUs)
	}
	if m.MemoryLimit <= 0 {
		t.Errorf("ThisMachine().MemoryLimit = %d: neither GOMEMLIMIT, cgroup memory.max nor /proc/meminfo read", m.MemoryLimit)
	}
}
