package configure

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
)

// ReasonMetricsCertificate is the event of a windows_exporter serving
// certificate issued for a node (a first one, or a renewal).
const ReasonMetricsCertificate = "MetricsCertificateIssued"

// MetricsCertificates gives a node's windows_exporter serving certificate
// and key: metricstls.Store (a CA winnode keeps, one certificate per node)
// or metricstls.ServiceCA (OpenShift's service CA, one certificate for the
// Service windows-exporter). why says why a new one was issued for the
// node ("": the one it has). The slices returned are read only.
type MetricsCertificates interface {
	Serving(ctx context.Context, node string, ip net.IP, now time.Time) (certPEM, keyPEM []byte, why string, err error)
}

// metricsFacts are windows_exporter's TLS files for the host's plan where
// the configurer serves node metrics (Configurer.Metrics): the serving
// certificate of the instance's node name (status.nodeName, fixed once,
// which the kubelet registers as) and InternalIP (the kubelet's --node-ip), kept in the operator's namespace
// and issued again before it expires, and its key, which the plan names
// by digest and sync uploads. A host whose kubelet picks its own address
// gets no exporter: its certificate could not name the address scrapers
// use. With KubeletServingMetrics the exporter serves with the kubelet's
// serving certificate: nothing to issue or upload, and that certificate
// names whatever address the kubelet reports (winnode's approver checks
// it, internal/csrapproval).
func (c *Configurer) metricsFacts(ctx context.Context, inst *winnodev1.WindowsInstance, info *plan.Info) (*plan.MetricsFacts, []byte, error) {
	if c.KubeletServingMetrics {
		return &plan.MetricsFacts{KubeletServing: true}, nil, nil
	}
	if c.Metrics == nil {
		return nil, nil, nil
	}
	// The instance's node name, fixed once (nodename.go): not the
	// hostname the host reports now.
	node := nodeName(inst)
	if node == "" {
		return nil, nil, fmt.Errorf("windows_exporter's serving certificate: WindowsInstance %s has no node name yet", inst.Name)
	}
	ip := net.ParseIP(plan.NodeIP(info, inst.Spec.Address))
	if ip == nil {
		c.Log.Info("no windows_exporter on this host: the kubelet picks its own address, which its certificate cannot name", "instance", inst.Name)
		return nil, nil, nil
	}
	cert, key, why, err := c.Metrics.Serving(ctx, node, ip, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("windows_exporter's serving certificate: %w", err)
	}
	if why != "" {
		c.event(inst, corev1.EventTypeNormal, ReasonMetricsCertificate, "issued windows_exporter's serving certificate for node %s at %s (%s)", node, ip, why)
	}
	return &plan.MetricsFacts{CertPEM: cert, Key: plan.DigestOf(key)}, key, nil
}
