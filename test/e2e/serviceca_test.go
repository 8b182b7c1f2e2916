package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// checkServiceCAServing (openshift flavor): the node's windows_exporter
// serves the service CA's certificate of the Service windows-exporter,
// which the Service asked the (simulated) service-ca controller for: it
// names windows-exporter.winnode-system.svc and chains to the service CA,
// whose bundle the controller injected into ConfigMap windows-exporter-ca
// under service-ca.crt; no CA of the operator's own is made.
func (w *world) checkServiceCAServing(t *testing.T, h *winsim.Host) {
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
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	name := metricstls.ServiceServerName(exporter.ServiceName, Namespace)
	address := net.JoinHostPort(h.IP(), fmt.Sprint(plan.WindowsExporterPort))
	testkit.Eventually(t, time.Minute, "windows_exporter at "+address+" serving the service CA's certificate for "+name, func() (bool, string) {
		conn, err := tls.Dial("tcp", address, &tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		leaf := conn.ConnectionState().PeerCertificates[0]
		return slices.Contains(leaf.DNSNames, name), fmt.Sprintf("the certificate names %v", leaf.DNSNames)
	})
	if _, err := w.kube.CoreV1().Secrets(Namespace).Get(ctx, metricstls.CASecretName, metav1.GetOptions{}); err == nil {
		t.Errorf("the operator made its own CA (Secret %s) on OpenShift", metricstls.CASecretName)
	}
}
