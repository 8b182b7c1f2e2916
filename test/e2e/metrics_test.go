package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// TestNodeMetricsOverTLS: once a host is a Ready node, its windows_exporter
// (the simulated one, under winnode-service.exe) answers an HTTPS GET of
// https://<InternalIP>:9182/metrics with windows_exporter's series, its
// certificate verified against the CA the operator publishes in the
// ConfigMap windows-exporter-ca for the node's address; a client that does
// not trust that CA is refused. The Service windows-exporter exists
// without a selector, with its EndpointSlice listing the node at its
// InternalIP when that is routable (hack/test-e2e.sh gives the simulated
// hosts addresses of $WINSIM_NETWORK); a loopback InternalIP (127.0.0.N,
// a plain go test run), which the API server refuses in an EndpointSlice,
// is left out.
//
// On routable addresses, a real Prometheus (testenv.StartPrometheus), given
// the scrape configuration prometheus-operator makes of the shipped
// ServiceMonitor and the shipped PrometheusRule's rules (prometheus_test.go),
// finds both of this test's nodes through the EndpointSlices, scrapes each
// over TLS with the label instance its node's name, and the recording
// rules give each node a CPU figure. A plain go test run, whose loopback
// addresses no EndpointSlice lists, skips that part (hack/test-e2e.sh runs
// it).
func TestNodeMetricsOverTLS(t *testing.T) {
	w := getWorld(t)
	h, other := w.newHost(t), w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "metrics", h)
	w.instanceFor(t, "metrics-2", other)
	inst := w.waitReady(t, "metrics", 3*time.Minute)
	ctx := context.Background()

	node, err := w.kube.CoreV1().Nodes().Get(ctx, inst.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ip string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	cm, err := w.kube.CoreV1().ConfigMaps(Namespace).Get(ctx, metricstls.CAConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the published CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data[metricstls.CAKey])) {
		t.Fatalf("ConfigMap %s has no CA certificate under %s", cm.Name, metricstls.CAKey)
	}
	url := "https://" + net.JoinHostPort(ip, fmt.Sprint(plan.WindowsExporterPort)) + "/metrics"
	scrape := func(pool *x509.CertPool) (string, error) { return scrapeTLS(url, pool, "") }
	var body string
	testkit.Eventually(t, time.Minute, "windows_exporter's metrics at "+url, func() (bool, string) {
		body, err = scrape(pool)
		return err == nil, fmt.Sprint(err)
	})
	for _, want := range []string{`windows_cpu_time_total{core="0,0",mode="idle"}`, "windows_cs_logical_processors ",
		"windows_memory_available_bytes ", `windows_logical_disk_size_bytes{volume="C:"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the metrics lack %q", want)
		}
	}
	if _, err := scrape(x509.NewCertPool()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the CA: %v, want a certificate error", err)
	}
	logFile, err := h.Path(plan.LogFile(plan.WindowsExporterService))
	if err != nil {
		t.Fatal(err)
	}
	if log, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(log), "simulated") || !strings.Contains(string(log), "TLS is enabled.") {
		t.Errorf("windows_exporter's log %s (%v):\n%s", plan.LogFile(plan.WindowsExporterService), err, log)
	}

	svc, err := w.kube.CoreV1().Services(Namespace).Get(ctx, exporter.ServiceName, metav1.GetOptions{})
	if err != nil || svc.Spec.Selector != nil {
		t.Fatalf("Service %s: %v, selector %v", exporter.ServiceName, err, svc.Spec.Selector)
	}
	// Listed at the node's address when that is routable (hack/test-e2e.sh's
	// network); a loopback address is left out.
	routable := !netip.MustParseAddr(ip).IsLoopback()
	testkit.Eventually(t, time.Minute, "the EndpointSlice of "+exporter.ServiceName, func() (bool, string) {
		s, err := w.kube.DiscoveryV1().EndpointSlices(Namespace).Get(ctx, exporter.ServiceName+"-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		listed := false
		for _, e := range s.Endpoints {
			if e.NodeName != nil && *e.NodeName == node.Name {
				if !routable || len(e.Addresses) != 1 || e.Addresses[0] != ip {
					return false, fmt.Sprintf("lists the node (InternalIP %s) at %s", ip, strings.Join(e.Addresses, ","))
				}
				listed = true
			}
		}
		return s.AddressType == discoveryv1.AddressTypeIPv4 && listed == routable, fmt.Sprintf("slice %+v", s.Endpoints)
	})

	if !routable {
		t.Logf("the simulated hosts' addresses are loopback addresses (no %s): the scrape by Prometheus is left to hack/test-e2e.sh", winsim.EnvNetwork)
		return
	}
	nodes := []string{node.Name, w.waitReady(t, "metrics-2", 3*time.Minute).Status.NodeName}
	checkPrometheusScrapes(t, w.startPrometheus(t, "prometheus").Prometheus, nodes)
}

// TestMetricsCertificateRenewed: a node's windows_exporter certificate with
// less than a third of its validity left (put in the operator's Secret
// while the operator is down) is issued again at the next check of the
// Ready host, reaches the host with the plan and is served at the next
// handshake, without a restart of windows_exporter (it reads its
// certificate files on every handshake).
func TestMetricsCertificateRenewed(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "renewal", h)
	inst := w.waitReady(t, "renewal", 3*time.Minute)
	waitStableServices(t, h)
	op.stop()
	ctx := context.Background()
	node := inst.Status.NodeName

	secrets := w.kube.CoreV1().Secrets(Namespace)
	caSecret, err := secrets.Get(ctx, metricstls.CASecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := metricstls.ParseCA(caSecret.Data[corev1.TLSCertKey], caSecret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	old, oldKey, err := ca.Issue(node, net.ParseIP(h.IP()), time.Now().Add(-80*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	certs, err := secrets.Get(ctx, metricstls.ServingSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	certs.Data[node+".crt"], certs.Data[node+".key"] = old, oldKey
	if _, err := secrets.Update(ctx, certs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pid := servicePIDs(t, h)[plan.WindowsExporterService]

	w.startOperator(t, operatorOptions{})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	address := net.JoinHostPort(h.IP(), fmt.Sprint(plan.WindowsExporterPort))
	testkit.Eventually(t, 3*time.Minute, "a renewed certificate served at "+address, func() (bool, string) {
		conn, err := tls.Dial("tcp", address, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		leaf := conn.ConnectionState().PeerCertificates[0]
		left := time.Until(leaf.NotAfter)
		return left > 80*24*time.Hour, fmt.Sprintf("the served certificate expires in %s", left.Round(time.Hour))
	})
	if got := servicePIDs(t, h)[plan.WindowsExporterService]; got != pid {
		t.Errorf("windows_exporter was restarted for a new certificate (PID %d, then %d)", pid, got)
	}
	testkit.Eventually(t, time.Minute, "the event "+configure.ReasonMetricsCertificate, func() (bool, string) {
		var notes []string
		for _, e := range w.events(t, "", "renewal") {
			if e.Reason == configure.ReasonMetricsCertificate {
				notes = append(notes, e.Message)
				if strings.Contains(e.Message, "expires at") {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("events %q", notes)
	})
}

// scrapeTLS GETs url over TLS verified with pool (and serverName, "": the
// URL's host), as a scraper does, returning the body of a 200 answer.
func scrapeTLS(url string, pool *x509.CertPool, serverName string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	return string(body), err
}
