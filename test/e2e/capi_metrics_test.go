package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
)

// checkWorkloadNodeMetrics: the windows_exporter of node, a Ready Windows
// node of a Cluster API workload cluster (Push or Pull), answers an HTTPS
// GET of https://<InternalIP>:9182/metrics with windows_exporter's series,
// its certificate (the kubelet's serving certificate) verified as a
// scraper of the workload cluster verifies it: against that cluster's CA
// as every Pod finds it (ConfigMap kube-root-ca.crt), with the node's name
// as the server name, and with its address, as Prometheus verifies an
// EndpointSlice's target. A client that does not trust that CA is refused.
func checkWorkloadNodeMetrics(t *testing.T, wlKube kubernetes.Interface, node string) {
	t.Helper()
	ctx := context.Background()
	n, err := wlKube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ip string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	root, err := wlKube.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the workload cluster's CA (ConfigMap default/kube-root-ca.crt): %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(root.Data["ca.crt"])) {
		t.Fatal("ConfigMap default/kube-root-ca.crt of the workload cluster holds no CA certificate")
	}
	url := "https://" + net.JoinHostPort(ip, fmt.Sprint(plan.WindowsExporterPort)) + "/metrics?collect[]=cs"
	scrape := func(pool *x509.CertPool, serverName string) (string, error) { return scrapeTLS(url, pool, serverName) }
	var body string
	start := time.Now()
	testkit.Eventually(t, 2*time.Minute, "node "+node+"'s windows_exporter at "+url, func() (bool, string) {
		body, err = scrape(pool, node)
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("node %s's windows_exporter answered over TLS %s after the node was Ready", node, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(body, "windows_cs_logical_processors ") {
		t.Errorf("node %s's metrics lack windows_cs_logical_processors:\n%s", node, body)
	}
	// As Prometheus scrapes an EndpointSlice's address: the certificate
	// names the node's InternalIP too.
	if _, err := scrape(pool, ""); err != nil {
		t.Errorf("node %s's windows_exporter verified by its address %s: %v", node, ip, err)
	}
	if _, err := scrape(x509.NewCertPool(), node); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("node %s: a client without the workload cluster's CA: %v, want a certificate error", node, err)
	}
}

// checkWorkloadSlices: in the workload cluster, winnode's namespace has
// the Service windows-exporter without a selector, and its EndpointSlices
// list each of nodes at its InternalIP when that is routable
// (hack/test-e2e.sh gives the simulated hosts addresses of
// $WINSIM_NETWORK); a loopback InternalIP (a plain go test run), which the
// API server refuses in an EndpointSlice, is left out.
func checkWorkloadSlices(t *testing.T, wlKube kubernetes.Interface, nodes []string) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, time.Minute, "the Service "+exporter.ServiceName+" in the workload cluster", func() (bool, string) {
		svc, err := wlKube.CoreV1().Services(Namespace).Get(ctx, exporter.ServiceName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return svc.Spec.Selector == nil && len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Port == plan.WindowsExporterPort, fmt.Sprintf("%+v", svc.Spec)
	})
	want := map[string]string{} // node → the address the slice must list ("": none)
	for _, name := range nodes {
		n, err := wlKube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && !netip.MustParseAddr(a.Address).IsLoopback() {
				want[name] = a.Address
			}
		}
	}
	start := time.Now()
	defer func() {
		t.Logf("the workload cluster's slices listed %v %s after the check began", nodes, time.Since(start).Round(time.Millisecond))
	}()
	testkit.Eventually(t, 2*time.Minute, "the workload cluster's EndpointSlices of "+exporter.ServiceName+" listing "+strings.Join(nodes, ", "), func() (bool, string) {
		list, err := wlKube.DiscoveryV1().EndpointSlices(Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + exporter.ServiceName})
		if err != nil {
			return false, err.Error()
		}
		listed := map[string]string{}
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.NodeName != nil && len(e.Addresses) == 1 {
					listed[*e.NodeName] = e.Addresses[0]
				}
			}
		}
		if len(list.Items) == 0 {
			return false, "no EndpointSlice"
		}
		for _, name := range nodes {
			if listed[name] != want[name] {
				return false, fmt.Sprintf("lists %v, want %v", listed, want)
			}
		}
		return true, ""
	})
}
