package standin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// WindowsExporter is Prometheus' windows_exporter
// (github.com/prometheus-community/windows_exporter).
const WindowsExporter = "windows_exporter"

// windowsExporterVersion is the release the payload carries
// (hack/payload/windows-exporter/go.mod).
const windowsExporterVersion = "0.27.2"

// windowsExporterCollectors are the collectors v0.27.2 has, of which the
// stand-in simulates cpu, cs, logical_disk, memory, net, os and system
// (metrics.go); service and container are accepted and report success
// with no series. windows_exporter itself drops a name it does not know
// without a word (pkg/collector Enable keeps only known names); the
// stand-in refuses one, stricter than the real program, so that a typing
// error in the plan shows.
var windowsExporterCollectors = []string{"ad", "adcs", "adfs", "cache", "container", "cpu", "cpu_info", "cs", "dfsr", "dhcp",
	"diskdrive", "dns", "exchange", "fsrmquota", "hyperv", "iis", "license", "logical_disk", "logon", "memory", "mscluster",
	"msmq", "mssql", "net", "netframework", "nps", "os", "pagefile", "perfdata", "physical_disk", "printer", "process",
	"remote_fx", "scheduled_task", "service", "smb", "smbclient", "smtp", "system", "tcp", "terminal_services", "textfile",
	"thermalzone", "time", "udp", "vmware"}

// exporterWebConfig is exporter-toolkit v0.11.0's web configuration
// (web/tls_config.go, Config and TLSConfig), decoded strictly as it is
// (yaml.UnmarshalStrict: an unknown key is an error). The stand-in serves
// TLS from cert_file and key_file only; inline cert/key, client
// certificates and basic auth are accepted and not simulated.
type exporterWebConfig struct {
	TLSServerConfig *struct {
		Cert              string   `json:"cert,omitempty"`
		Key               string   `json:"key,omitempty"`
		ClientCA          string   `json:"client_ca,omitempty"`
		CertFile          string   `json:"cert_file,omitempty"`
		KeyFile           string   `json:"key_file,omitempty"`
		ClientAuthType    string   `json:"client_auth_type,omitempty"`
		ClientCAFile      string   `json:"client_ca_file,omitempty"`
		CipherSuites      []string `json:"cipher_suites,omitempty"`
		CurvePreferences  []string `json:"curve_preferences,omitempty"`
		MinVersion        string   `json:"min_version,omitempty"`
		MaxVersion        string   `json:"max_version,omitempty"`
		PreferServer      bool     `json:"prefer_server_cipher_suites,omitempty"`
		ClientAllowedSans []string `json:"client_allowed_sans,omitempty"`
	} `json:"tls_server_config,omitempty"`
	HTTPServerConfig map[string]any    `json:"http_server_config,omitempty"`
	BasicAuthUsers   map[string]string `json:"basic_auth_users,omitempty"`
}

// runWindowsExporter is the simulated windows_exporter: it parses its flags
// as the real one does (kingpin: an unknown flag is "windows_exporter.exe:
// error: unknown long flag '--x', try --help", exit 1), prints its version
// for --version, reads --web.config.file as exporter-toolkit does and
// serves /metrics (metrics.go) and /health over TLS with the certificate
// and key the file names, read again on every handshake as exporter-toolkit
// reads them (GetCertificate), so a renewed certificate is served at once.
// A web configuration it cannot use ends it with exit 1 after "cannot
// start windows_exporter", as the real one. It logs (logfmt, to standard
// error, its default --log.file) that it is simulated.
// Differences: it listens on the simulated host's address where the real
// one listens on every address (":9182"); under winnode-service.exe it is
// not a service, as the real one is not (svc.IsWindowsService is false for
// a child process).
func runWindowsExporter(ctx context.Context, args []string) int {
	flags, err := newKingpinFlags(WindowsExporter)
	if err == nil {
		err = flags.parse(args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "windows_exporter.exe: error: %v, try --help\n", err)
		return 1
	}
	if flags.get("version", "false") == "true" {
		fmt.Printf("windows_exporter, version %s (branch: HEAD, revision: simulated)\n  platform:         windows/amd64 (simulated by winsim)\n", windowsExporterVersion)
		return 0
	}
	if flags.get("help", "false") == "true" {
		fmt.Println("usage: windows_exporter [<flags>] (simulated by winsim)")
		return 0
	}
	e := &exporter{start: timeNow()}
	if err := e.configure(ctx, flags); err != nil {
		e.logf("error", "cannot start windows_exporter", "err", err)
		return 1
	}
	return e.serve(ctx)
}

// exporter is one running simulated windows_exporter.
type exporter struct {
	start      time.Time
	collectors []string
	addresses  []string
	certFile   string // Linux paths on the simulated host
	keyFile    string
	certName   string // the same as the web configuration names them
	keyName    string
	hostIP     string
	boot       time.Time
	diskRoot   string
}

// logf writes one logfmt line as windows_exporter's go-kit logger does
// (ts, level, msg, then the pairs), saying it is simulated.
func (e *exporter) logf(level, msg string, pairs ...any) {
	line := fmt.Sprintf("ts=%s level=%s msg=%q simulated=winsim", timeNow().UTC().Format(time.RFC3339Nano), level, msg)
	for i := 0; i+1 < len(pairs); i += 2 {
		line += fmt.Sprintf(" %v=%q", pairs[i], fmt.Sprint(pairs[i+1]))
	}
	fmt.Fprintln(os.Stderr, line)
}

// configure reads the collectors, listen addresses and web configuration.
func (e *exporter) configure(ctx context.Context, flags *kingpinFlags) error {
	for _, c := range strings.Split(flags.get("collectors.enabled", "cpu,cs,logical_disk,physical_disk,net,os,service,system"), ",") {
		if !slices.Contains(windowsExporterCollectors, c) {
			return fmt.Errorf("--collectors.enabled: %q is not a collector of windows_exporter %s (simulated: the real one ignores it)", c, windowsExporterVersion)
		}
		e.collectors = append(e.collectors, c)
	}
	e.addresses = flags.multi["web.listen-address"]
	if len(e.addresses) == 0 {
		e.addresses = []string{":9182"}
	}
	if err := e.readWebConfig(flags.get("web.config.file", "")); err != nil {
		return err
	}
	c, err := scmClient()
	if err != nil {
		return err
	}
	host, err := c.Host(ctx)
	if err != nil {
		return fmt.Errorf("asking the simulated host about itself: %w", err)
	}
	e.hostIP, e.boot = host.DefaultIPv4, host.BootTime
	e.diskRoot, err = hostPath(`C:\`)
	return err
}

// readWebConfig decodes the web configuration strictly and checks that
// its certificate and key load, as exporter-toolkit's Serve does before
// it accepts a connection. No file: plain HTTP, "TLS is disabled."
func (e *exporter) readWebConfig(file string) error {
	if file == "" {
		return nil
	}
	local, err := hostPath(file)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	var c exporterWebConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	t := c.TLSServerConfig
	if t == nil || (t.CertFile == "" && t.Cert == "") {
		return errors.New("TLS config is not present")
	}
	if t.CertFile == "" || t.KeyFile == "" {
		return errors.New("missing one of cert_file or key_file (simulated: inline cert and key are not)")
	}
	// exporter-toolkit joins relative paths with the file's folder.
	e.certName, e.keyName = joinRelative(file, t.CertFile), joinRelative(file, t.KeyFile)
	if e.certFile, err = hostPath(e.certName); err != nil {
		return err
	}
	if e.keyFile, err = hostPath(e.keyName); err != nil {
		return err
	}
	_, err = e.certificate(nil)
	return err
}

// joinRelative is exporter-toolkit's SetDirectory for Windows paths.
func joinRelative(configFile, p string) string {
	if len(p) > 1 && (p[1] == ':' || strings.HasPrefix(p, `\`)) {
		return p
	}
	return configFile[:strings.LastIndexAny(configFile, `\/`)+1] + p
}

// certificate reads the certificate and key files for each handshake, as
// exporter-toolkit v0.11.0 does (web/tls_config.go, ConfigToTLSConfig's
// loadCert, called at start and again from GetConfigForClient on every
// connection): each file read whole, then tls.X509KeyPair, which takes
// the CERTIFICATE blocks of the first and the first private key block of
// the second and skips the other blocks, so cert_file and key_file may
// name one file holding both (the kubelet's kubelet-server-current.pem).
// Its errors are exporter-toolkit's words: a file that does not exist yet
// (the kubelet's, before its serving CSR is approved) is "failed to read
// cert_file (PATH): ...", which at start ends windows_exporter (main
// logs "cannot start windows_exporter" and exits 1) and on a later
// handshake fails that handshake only.
func (e *exporter) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(e.certFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read cert_file (%s): %s (simulated)", e.certName, windowsNotFound(err))
	}
	keyPEM, err := os.ReadFile(e.keyFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read key_file (%s): %s (simulated)", e.keyName, windowsNotFound(err))
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("failed to load X509KeyPair: %w", err)
	}
	return &c, nil
}

// windowsNotFound is os.ReadFile's error as Windows words a missing file.
func windowsNotFound(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "The system cannot find the file specified."
	}
	return err.Error()
}

// serve listens on each address until stopped.
func (e *exporter) serve(ctx context.Context) int {
	e.logf("info", "Enabled collectors: "+strings.Join(e.collectors, ", "))
	e.logf("info", "Starting windows_exporter", "version", windowsExporterVersion)
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.metricsHandler())
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if e.certFile != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: e.certificate}
	}
	errs := make(chan error, len(e.addresses))
	for _, address := range e.addresses {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			e.logf("error", "cannot start windows_exporter", "err", err)
			return 1
		}
		if host == "" {
			host = e.hostIP // every address of the simulated host: its own
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err != nil {
			e.logf("error", "cannot start windows_exporter", "err", err)
			return 1
		}
		e.logf("info", "Listening on", "address", ln.Addr().String())
		e.logf("info", fmt.Sprintf("TLS is %s.", map[bool]string{true: "enabled", false: "disabled"}[e.certFile != ""]), "address", ln.Addr().String())
		go func() {
			if e.certFile != "" {
				errs <- srv.ServeTLS(ln, "", "")
			} else {
				errs <- srv.Serve(ln)
			}
		}()
	}
	select {
	case <-ctx.Done():
		e.logf("info", "Shutting down windows_exporter via kill signal")
		_ = srv.Close()
		return 0
	case err := <-errs:
		e.logf("error", "cannot start windows_exporter", "err", err)
		return 1
	}
}

// diskPath is the simulated C: drive's folder on this machine.
func (e *exporter) diskPath() string { return filepath.Clean(e.diskRoot) }
