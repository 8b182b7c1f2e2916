package machinesource

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Sources name the Machine sources in winnode_machines_left_alone_total.
const (
	SourceMachineAPI = "machine-api"
	SourceClusterAPI = "cluster-api"
)

// Why a source leaves a Machine without a WindowsInstance (Kind.Provisioned).
const (
	// NotWindows: not a Machine winnode configures (OpenShift: no label
	// machine.openshift.io/os-id: Windows; Cluster API: its bootstrap
	// config is not a WinnodeConfig).
	NotWindows = "not_windows"
	// Ignored: labelled winnode.io/ignore: "true" (OpenShift).
	Ignored = "ignored"
	// NotProvisioned: winnode's, but not provisioned yet (no InternalIP,
	// phase, infrastructure or provider ID yet).
	NotProvisioned = "not_provisioned"
)

// leftAlone counts the looks of a source at a Machine it left alone. A
// source that makes nothing of a Machine writes nothing anywhere, so this
// is what shows it looked: the answer to "why has my Machine no
// WindowsInstance?" by reason, and what tests wait on before checking that
// nothing happened.
var leftAlone = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "winnode_machines_left_alone_total",
	Help: "Looks of the Machine sources at a Machine they left without a WindowsInstance, by source (machine-api, cluster-api) and reason " +
		"(not_windows: not a Windows Machine winnode configures; ignored: labelled winnode.io/ignore; not_provisioned: not provisioned yet).",
}, []string{"source", "reason"})

func init() {
	metrics.Registry.MustRegister(leftAlone)
	// Series exist from the start, at zero, so rate() and alerts see them.
	for _, r := range []string{NotWindows, Ignored, NotProvisioned} {
		leftAlone.WithLabelValues(SourceMachineAPI, r)
	}
	for _, r := range []string{NotWindows, NotProvisioned} {
		leftAlone.WithLabelValues(SourceClusterAPI, r)
	}
}
