package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// checkServiceCAServing (openshift flavor): the node's windows_exporter
// serves the service CA's certificate of the Service windows-exporter,
// which the Service asked the (simulated) service-ca controller for: it
// names windows-exporter.winnode-system.svc and chains to the service CA,
// whose bundle the controller injected into ConfigMap windows-exporter-ca
// under service-ca.crt; a certificate written again reaches the host; no
// CA of the operator's own is made.
func (w *world) checkServiceCAServing(t *testing.T, h *winsim.Host, pr *phaseRecorder, inst string) {
	t.Helper()
	ctx := context.Background()
	svc, err := w.kube.CoreV1().Services(Namespace).Get(ctx, exporter.ServiceName, metav1.GetOptions{})
	if err != nil || svc.Annotations[metricstls.AnnotationServingCertSecret] != metricstls.ServiceCASecretName {
		t.Fatalf("Service %s (%v) does not ask the service CA for Secret %s: annotations %v", exporter.ServiceName, err, metricstls.ServiceCASecretName, svc.Annotations)
	}
	var bundle []byte
	testkit.Eventually(t, time.Minute, "the service CA bundle in ConfigMap "+metricstls.CAConfigMapName, func() (bool, string) {
		cm, err := w.kube.CoreV1().ConfigMaps(Namespace).Get(ctx, metricstls.CAConfigMapName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		bundle = []byte(cm.Data[metricstls.ServiceCAKey])
		return len(bundle) > 0, fmt.Sprintf("annotations %v, data keys %v", cm.Annotations, len(cm.Data))
	})
	if !bytes.Equal(bundle, w.env.OpenShift.ServiceCA) {
		t.Errorf("ConfigMap %s holds a bundle that is not the service CA's certificate", metricstls.CAConfigMapName)
	}
	first := waitServiceCAServed(t, h, bundle, nil)
	// A certificate the service CA writes again (here: its Secret deleted,
	// as an administrator fixing it would) reaches the host at once, with
	// a new plan (Ready → Upgrading → Ready, waited for so that the next
	// subtests see only their own plan changes), and the node never fails
	// meanwhile (the operator gives the last certificate while the Secret
	// is missing).
	phases := len(pr.of(inst))
	before := planVersion(w.get(t, inst))
	if err := w.kube.CoreV1().Secrets(Namespace).Delete(ctx, metricstls.ServiceCASecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceCAServed(t, h, bundle, first)
	w.waitPlanChanged(t, pr, inst, before)
	if after := pr.of(inst)[phases:]; slices.Contains(after, winnodev1.PhaseFailed) {
		t.Errorf("instance %s went through phases %v while the service CA wrote the certificate again", inst, after)
	}
	if _, err := w.kube.CoreV1().Secrets(Namespace).Get(ctx, metricstls.CASecretName, metav1.GetOptions{}); err == nil {
		t.Errorf("the operator made its own CA (Secret %s) on OpenShift", metricstls.CASecretName)
	}
}

// waitServiceCAServed waits until the host's windows_exporter serves a
// certificate other than not (any, when nil) that verifies with the CA
// bundle for the Service's name, and returns it.
func waitServiceCAServed(t *testing.T, h *winsim.Host, bundle []byte, not *x509.Certificate) *x509.Certificate {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatal("the service CA bundle holds no certificate")
	}
	name := metricstls.ServiceServerName(exporter.ServiceName, Namespace)
	address := net.JoinHostPort(h.IP(), fmt.Sprint(plan.WindowsExporterPort))
	var leaf *x509.Certificate
	testkit.Eventually(t, time.Minute, "windows_exporter at "+address+" serving a new service CA certificate for "+name, func() (bool, string) {
		conn, err := tls.Dial("tcp", address, &tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		leaf = conn.ConnectionState().PeerCertificates[0]
		return slices.Contains(leaf.DNSNames, name) && (not == nil || !leaf.Equal(not)), fmt.Sprintf("the certificate names %v, serial %v", leaf.DNSNames, leaf.SerialNumber)
	})
	return leaf
}

// checkServiceCAScrapes (openshift flavor, on routable addresses: see
// TestNodeMetricsOverTLS): a real Prometheus, given the scrape
// configuration prometheus-operator makes of the ServiceMonitor of
// config/prometheus-openshift (prometheus_test.go), finds the node through
// the EndpointSlices of the Service windows-exporter and scrapes its
// windows_exporter over TLS verified with the service CA bundle injected
// into ConfigMap windows-exporter-ca and the server name
// windows-exporter.winnode-system.svc, with instance the node's name, and
// the recording rules give the node a CPU figure.
//
// Then the service CA is rotated (the manual rotation: no grace period,
// the new bundle is the new CA alone): the service-ca controller injects
// the new bundle and writes a new certificate into the Secret, the operator
// copies the new pair to the host with a new plan (Ready → Upgrading →
// Ready, never Failed), and once Prometheus' CA file is the new bundle
// (syncCAFiles: as the mounted ConfigMap changes in a cluster) a scrape
// succeeds, verified with the new bundle alone (after one failed with an
// unrelated CA, which shows that Prometheus verifies anew).
func (w *world) checkServiceCAScrapes(t *testing.T, h *winsim.Host, pr *phaseRecorder, inst string) {
	t.Helper()
	ctx := context.Background()
	if netip.MustParseAddr(h.IP()).IsLoopback() {
		t.Skipf("the simulated hosts' addresses are loopback addresses (no %s), which no EndpointSlice lists: the scrape by Prometheus is left to hack/test-e2e.sh", winsim.EnvNetwork)
	}
	node := w.get(t, inst).Status.NodeName
	p := w.startPrometheus(t, "prometheus-openshift")
	checkPrometheusScrapes(t, p.Prometheus, []string{node})

	phases, before := len(pr.of(inst)), planVersion(w.get(t, inst))
	if err := w.env.OpenShift.RotateServiceCA(ctx); err != nil {
		t.Fatal(err)
	}
	waitServiceCAServed(t, h, w.env.OpenShift.ServiceCA, nil)
	w.waitPlanChanged(t, pr, inst, before)
	if after := pr.of(inst)[phases:]; slices.Contains(after, winnodev1.PhaseFailed) {
		t.Errorf("instance %s went through phases %v while the service CA was rotated", inst, after)
	}
	// First a CA file of an unrelated CA: the scrapes fail, which shows
	// that a changed CA file makes Prometheus verify the host anew rather
	// than keep a connection verified with the old bundle, so that the
	// success below is the new bundle's.
	for file := range p.caFiles {
		writeFileAtomically(t, file, newCA(t))
	}
	waitTarget(t, p.Prometheus, "refused with an unrelated CA", func(tg target) bool {
		return tg.Health == "down" && strings.Contains(tg.LastError, "x509")
	})
	// A target's scrapes run one after the other: once one has failed
	// with the unrelated CA, the next that succeeds read the new bundle.
	p.syncCAFiles(t, w)
	waitTarget(t, p.Prometheus, "up with the new bundle", func(tg target) bool { return tg.Health == "up" })
	checkPrometheusScrapes(t, p.Prometheus, []string{node})
}

// waitTarget waits until Prometheus has one active target and it is as ok
// says.
func waitTarget(t *testing.T, p *testenv.Prometheus, what string, ok func(target) bool) {
	t.Helper()
	testkit.Eventually(t, time.Minute, "Prometheus' target "+what, func() (bool, string) {
		targets, err := activeTargets(context.Background(), p)
		if err != nil {
			return false, err.Error()
		}
		return len(targets) == 1 && ok(targets[0]), fmt.Sprintf("targets %+v", targets)
	})
}
