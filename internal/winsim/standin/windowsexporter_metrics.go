package standin

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The series the simulated windows_exporter serves: a few of each
// simulated collector, with the names, types, labels and help texts of
// windows_exporter v0.27.2 (its pkg/collector/<name>/<name>.go
// prometheus.NewDesc calls), and values of the simulated host: its
// processors and memory are this machine's, its C: drive the folder that
// stands for it, its boot time the simulated host's; the CPU counters
// advance from the exporter's start at a fixed share per mode (90 % idle,
// 7 % user, 3 % privileged), so that rate() over them is what a lightly
// loaded node shows. Scrapes may ask for a subset with collect[]=NAME, as
// the real one's /metrics does.
var (
	descCPUTime       = desc("cpu", "time_total", "Time that processor spent in different modes (dpc, idle, interrupt, privileged, user)", "core", "mode")
	descCSProcessors  = desc("cs", "logical_processors", "ComputerSystem.NumberOfLogicalProcessors")
	descCSMemory      = desc("cs", "physical_memory_bytes", "ComputerSystem.TotalPhysicalMemory")
	descDiskSize      = desc("logical_disk", "size_bytes", "Total space in bytes, updates every 10-15 min (LogicalDisk.PercentFreeSpace_Base)", "volume")
	descDiskFree      = desc("logical_disk", "free_bytes", "Free space in bytes, updates every 10-15 min (LogicalDisk.PercentFreeSpace)", "volume")
	descMemAvailable  = desc("memory", "available_bytes", "The amount of physical memory immediately available for allocation to a process or for system use. It is equal to the sum of memory assigned to the standby (cached), free and zero page lists (AvailableBytes)")
	descNetReceived   = desc("net", "bytes_received_total", "(Network.BytesReceivedPerSec)", "nic")
	descNetSent       = desc("net", "bytes_sent_total", "(Network.BytesSentPerSec)", "nic")
	descOSVisible     = desc("os", "visible_memory_bytes", "OperatingSystem.TotalVisibleMemorySize")
	descOSFree        = desc("os", "physical_memory_free_bytes", "OperatingSystem.FreePhysicalMemory")
	descSystemUpTime  = desc("system", "system_up_time", "System boot time (WMI source: PerfOS_System.SystemUpTime)")
	descCollectorOK   = desc("exporter", "collector_success", "windows_exporter: Whether the collector was successful.", "collector")
	descExporterBuild = desc("exporter", "build_info", "A metric with a constant '1' value labeled by version, revision, branch, goversion from which windows_exporter was built, and the goos and goarch for the build.", "branch", "goarch", "goos", "goversion", "revision", "tags", "version")
)

func desc(collector, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("windows_"+collector+"_"+name, help, labels, nil)
}

// cpuShares are the simulated share of each mode of a core's time.
var cpuShares = []struct {
	mode  string
	share float64
}{{"dpc", 0}, {"idle", 0.90}, {"interrupt", 0}, {"privileged", 0.03}, {"user", 0.07}}

// metricsHandler serves /metrics: the enabled collectors, or those of
// collect[] that are enabled.
func (e *exporter) metricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		names := e.collectors
		if asked := r.URL.Query()["collect[]"]; len(asked) > 0 {
			names = nil
			for _, n := range asked {
				if !slices.Contains(e.collectors, n) {
					http.Error(w, fmt.Sprintf("Couldn't create filtered metrics handler: collector %s not enabled", n), http.StatusBadRequest)
					return
				}
				names = append(names, n)
			}
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(&exporterCollector{e: e, names: names})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
}

// exporterCollector is one scrape's collection.
type exporterCollector struct {
	e     *exporter
	names []string
}

func (c *exporterCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *exporterCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	var si syscall.Sysinfo_t
	_ = syscall.Sysinfo(&si)
	total, free := float64(si.Totalram)*float64(si.Unit), float64(si.Freeram+si.Bufferram)*float64(si.Unit)
	seconds := timeNow().Sub(c.e.start).Seconds()
	for _, name := range c.names {
		switch name {
		case "cpu":
			for core := 0; core < runtime.NumCPU(); core++ {
				for _, m := range cpuShares {
					counter(descCPUTime, seconds*m.share, fmt.Sprintf("0,%d", core), m.mode)
				}
			}
		case "cs":
			gauge(descCSProcessors, float64(runtime.NumCPU()))
			gauge(descCSMemory, total)
		case "logical_disk":
			var fs syscall.Statfs_t
			if err := syscall.Statfs(c.e.diskPath(), &fs); err == nil {
				gauge(descDiskSize, float64(fs.Blocks)*float64(fs.Bsize), "C:")
				gauge(descDiskFree, float64(fs.Bavail)*float64(fs.Bsize), "C:")
			}
		case "memory":
			gauge(descMemAvailable, free)
		case "net":
			counter(descNetReceived, seconds*1000, "Ethernet")
			counter(descNetSent, seconds*800, "Ethernet")
		case "os":
			gauge(descOSVisible, total)
			gauge(descOSFree, free)
		case "system":
			gauge(descSystemUpTime, float64(c.e.boot.Unix()))
		}
		gauge(descCollectorOK, 1, name)
	}
	gauge(descExporterBuild, 1, "HEAD", "amd64", "windows", runtime.Version(), "simulated", "unknown", windowsExporterVersion)
}
