package standin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// The stand-in takes the command line winnode renders and refuses what
// the real windows_exporter refuses, with kingpin's words.
func TestWindowsExporterFlags(t *testing.T) {
	f, err := newKingpinFlags(WindowsExporter)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.parse([]string{"--web.listen-address=:9182", "--web.listen-address", "127.0.0.1:19182", `--web.config.file=C:\k\windows_exporter\web-config.yml`,
		"--collectors.enabled=cpu,cs", "--no-debug.enabled", "--version"}); err != nil {
		t.Fatalf("flags the real one accepts: %v", err)
	}
	if got := f.multi["web.listen-address"]; len(got) != 2 || f.get("version", "") != "true" || f.get("debug.enabled", "") != "false" {
		t.Errorf("parsed %v", f.values)
	}
	for args, want := range map[string]string{
		"--web.listen=:9182":           "unknown long flag '--web.listen'",
		"--web.config.file":            "expected argument for flag '--web.config.file'",
		"--no-web.config.file":         "unknown long flag '--no-web.config.file'",
		"--collector.service.services": "unknown long flag '--collector.service.services'",
	} {
		f, _ := newKingpinFlags(WindowsExporter)
		if err := f.parse([]string{args}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// exporterTLS writes a serving certificate for ip, signed by a fresh CA,
// and winnode's web configuration to the host, and returns the CA pool.
func exporterTLS(t *testing.T, h *winsim.Host, ip string) *x509.CertPool {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("node", []net.IP{net.ParseIP(ip)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	web, err := plan.WindowsExporterWebConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	writeHostFile(t, h, plan.WindowsExporterCertPath, certPEM)
	writeHostFile(t, h, plan.WindowsExporterKeyPath, keyPEM)
	writeHostFile(t, h, plan.WindowsExporterWebConfigPath, web)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}

// freePort is a port free on ip now.
func freePort(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// On a simulated host the stand-in serves /metrics over TLS with the
// certificate the web configuration names, verified against its CA, with
// windows_exporter's metric names; collect[] narrows a scrape; a renewed
// certificate is served at the next handshake; plain HTTP gets no metrics.
func TestWindowsExporterServesMetricsOverTLS(t *testing.T) {
	h, _ := fixture.SimHost(t, winsim.Options{})
	t.Setenv(simscm.EnvRoot, h.Root())
	t.Setenv(simscm.EnvSocket, h.SCMSocket())
	pool := exporterTLS(t, h, h.IP())
	port := freePort(t, h.IP())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runWindowsExporter(ctx, []string{"--web.listen-address=:" + port, "--web.config.file=" + plan.WindowsExporterWebConfigPath,
			"--collectors.enabled=" + strings.Join(plan.WindowsExporterCollectors, ",")})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d after a stop", code)
		}
	}()
	url := "https://" + net.JoinHostPort(h.IP(), port) + "/metrics"
	get := func(pool *x509.CertPool, url string) (string, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return string(body), fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return string(body), err
	}
	var body string
	testkit.Eventually(t, 20*time.Second, "metrics at "+url, func() (bool, string) {
		var err error
		body, err = get(pool, url)
		return err == nil, fmt.Sprint(err)
	})
	for _, want := range []string{"# TYPE windows_cpu_time_total counter", `windows_cpu_time_total{core="0,0",mode="idle"}`,
		"windows_cs_logical_processors ", `windows_logical_disk_free_bytes{volume="C:"}`, "windows_memory_available_bytes ",
		"windows_os_visible_memory_bytes ", "windows_system_system_up_time ", `windows_exporter_collector_success{collector="container"} 1`,
		`windows_exporter_build_info{branch="HEAD"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the metrics lack %q:\n%s", want, body)
		}
	}
	if body, err := get(pool, url+"?collect[]=cs"); err != nil || strings.Contains(body, "windows_cpu_time_total") || !strings.Contains(body, "windows_cs_logical_processors") {
		t.Errorf("collect[]=cs: %v\n%s", err, body)
	}
	if _, err := get(pool, "http"+strings.TrimPrefix(url, "https")); err == nil {
		t.Error("plain HTTP got metrics from a TLS exporter")
	}
	renewed := exporterTLS(t, h, h.IP())
	if _, err := get(pool, url); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("the old CA still verifies after the certificate changed: %v", err)
	}
	if _, err := get(renewed, url); err != nil {
		t.Errorf("the renewed certificate is not served at the next handshake: %v", err)
	}
}

// A web configuration exporter-toolkit refuses (an unknown key, a missing
// certificate) stops the exporter at start, naming the problem.
func TestWindowsExporterRefusesABadWebConfig(t *testing.T) {
	h, _ := fixture.SimHost(t, winsim.Options{})
	t.Setenv(simscm.EnvRoot, h.Root())
	t.Setenv(simscm.EnvSocket, h.SCMSocket())
	exporterTLS(t, h, h.IP())
	for name, tc := range map[string]struct{ content, want string }{
		"unknown key":  {"tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n  certfile: x\n", `unknown field "certfile"`},
		"no TLS":       {"http_server_config:\n  http2: true\n", "TLS config is not present"},
		"missing file": {"tls_server_config:\n  cert_file: nothere.crt\n  key_file: tls.key\n", `failed to read cert_file (C:\k\windows_exporter\nothere.crt)`},
		"key as cert":  {"tls_server_config:\n  cert_file: tls.key\n  key_file: tls.key\n", "failed to load X509KeyPair"},
	} {
		writeHostFile(t, h, `C:\k\windows_exporter\bad.yml`, []byte(tc.content))
		e := &exporter{}
		f, _ := newKingpinFlags(WindowsExporter)
		if err := f.parse([]string{`--web.config.file=C:\k\windows_exporter\bad.yml`}); err != nil {
			t.Fatal(err)
		}
		if err := e.configure(context.Background(), f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	e := &exporter{}
	f, _ := newKingpinFlags(WindowsExporter)
	_ = f.parse([]string{"--collectors.enabled=cpu,memroy"})
	if err := e.configure(context.Background(), f); err == nil || !strings.Contains(err.Error(), `"memroy"`) {
		t.Errorf("an unknown collector: %v", err)
	}
}

// With the kubelet's serving certificate (certificate and key in one PEM,
// named as both cert_file and key_file, as winnode configures workload
// clusters' nodes), the exporter ends at start, exit 1, while the file
// does not exist (the serving CSR not approved yet), as the real one
// does, and starts once it holds both.
func TestWindowsExporterWithTheKubeletsCertificate(t *testing.T) {
	h, _ := fixture.SimHost(t, winsim.Options{})
	t.Setenv(simscm.EnvRoot, h.Root())
	t.Setenv(simscm.EnvSocket, h.SCMSocket())
	web, err := plan.WindowsExporterWebConfig(true)
	if err != nil {
		t.Fatal(err)
	}
	writeHostFile(t, h, plan.WindowsExporterWebConfigPath, web)
	args := []string{"--web.listen-address=:" + freePort(t, h.IP()), "--web.config.file=" + plan.WindowsExporterWebConfigPath}
	if code := runWindowsExporter(context.Background(), args); code != 1 {
		t.Errorf("started without the kubelet's certificate: exit %d, want 1", code)
	}
	e := &exporter{}
	f, _ := newKingpinFlags(WindowsExporter)
	if err := f.parse(args); err != nil {
		t.Fatal(err)
	}
	if err := e.configure(context.Background(), f); err == nil || !strings.Contains(err.Error(), `failed to read cert_file (C:\var\lib\kubelet\pki\kubelet-server-current.pem)`) {
		t.Errorf("no kubelet certificate yet: %v", err)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("win-1", []net.IP{net.ParseIP(h.IP())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeHostFile(t, h, plan.KubeletServingCertPath, append(certPEM, keyPEM...))
	if err := e.configure(context.Background(), f); err != nil {
		t.Errorf("the kubelet's certificate and key in one file: %v", err)
	}
}
