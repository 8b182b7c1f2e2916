package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// The operator's own metrics, served with controller-runtime's on the
// manager's metrics endpoint.
var (
	configurationDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "winnode_configuration_duration_seconds",
		Help: "Time from the start of a host's configuration to its node being Ready.",
		// 10 s to ~45 min: a no-op reconcile up to a slow first payload upload.
		Buckets: prometheus.ExponentialBuckets(10, 2, 9),
	})
	bytesUploaded = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "winnode_bytes_uploaded_total",
		Help: "Payload bytes uploaded to Windows hosts over SFTP.",
	})
	sshFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "winnode_ssh_failures_total",
		Help: "Failed SSH connections to Windows hosts, by reason (a condition reason such as Unreachable, AuthenticationFailed, HostKeyChanged).",
	}, []string{"reason"})
	instancesDesc = prometheus.NewDesc("winnode_instances",
		"WindowsInstances by phase (Pending, Configuring, Ready, Upgrading, Deconfiguring, Failed).",
		[]string{"phase"}, nil)
)

func init() {
	metrics.Registry.MustRegister(configurationDuration, bytesUploaded, sshFailures)
	// Series exist from the start, at zero, so rate() and alerts see them.
	for _, reason := range []string{winnodev1.ReasonUnreachable, winnodev1.ReasonAuthFailed, winnodev1.ReasonHostKeyChanged} {
		sshFailures.WithLabelValues(reason)
	}
}

// RecordConfiguration observes one finished configuration (the instance
// reconciler's Configured hook).
func RecordConfiguration(d time.Duration) { configurationDuration.Observe(d.Seconds()) }

// RecordUpload counts uploaded payload bytes (the Uploaded hook).
func RecordUpload(n int64) {
	if n > 0 {
		bytesUploaded.Add(float64(n))
	}
}

// RecordSSHFailure counts one failed SSH connection (the SSHFailed hook).
// reason must come from a small fixed set (condition reasons): it is a label.
func RecordSSHFailure(reason string) { sshFailures.WithLabelValues(reason).Inc() }

// instanceCollector reports winnode_instances{phase} at scrape time from the
// manager's cache, so the figure is never out of step with the objects. Every
// phase is reported, zero included, so a dashboard sees a phase empty out.
type instanceCollector struct{ reader client.Reader }

func (c instanceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- instancesDesc }

func (c instanceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list winnodev1.WindowsInstanceList
	// Counted, not changed: the cache's objects, not a copy of the fleet
	// at every scrape.
	if err := c.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(instancesDesc, err)
		return
	}
	counts := map[winnodev1.Phase]int{}
	for _, p := range []winnodev1.Phase{winnodev1.PhasePending, winnodev1.PhaseConfiguring, winnodev1.PhaseReady,
		winnodev1.PhaseUpgrading, winnodev1.PhaseDeconfiguring, winnodev1.PhaseFailed} {
		counts[p] = 0
	}
	for _, wi := range list.Items {
		p := wi.Status.Phase
		if p == "" {
			p = winnodev1.PhasePending // not yet seen by the instance reconciler
		}
		counts[p]++
	}
	for p, n := range counts {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n), string(p))
	}
}

var collectorMu sync.Mutex
var currentCollector prometheus.Collector

// registerInstanceCollector makes winnode_instances read from reader. A
// process that sets up several managers (tests, the demo) keeps the last.
func registerInstanceCollector(reader client.Reader) error {
	collectorMu.Lock()
	defer collectorMu.Unlock()
	if currentCollector != nil {
		metrics.Registry.Unregister(currentCollector)
	}
	c := instanceCollector{reader: reader}
	if err := metrics.Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	currentCollector = c
	return nil
}
