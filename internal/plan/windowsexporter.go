package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// windows_exporter (github.com/prometheus-community/windows_exporter): the
// node's metrics for Prometheus, as WMCO runs it: port 9182, HTTPS with a
// serving certificate the operator issues and keeps current (docs/metrics.md).
const (
	PayloadWindowsExporter = "windows_exporter.exe"
	WindowsExporterService = "windows_exporter"
	// WindowsExporterPort is windows_exporter's default --web.listen-address
	// port, which scrapers expect.
	WindowsExporterPort = 9182
	// WindowsExporterDir holds its web configuration and TLS files.
	WindowsExporterDir = `C:\k\windows_exporter`
	// WindowsExporterWebConfigPath is its --web.config.file.
	WindowsExporterWebConfigPath = `C:\k\windows_exporter\web-config.yml`
	// WindowsExporterCertPath and WindowsExporterKeyPath are its serving
	// certificate and key: the certificate names the node and its
	// InternalIP, signed by the operator's metrics CA.
	WindowsExporterCertPath = `C:\k\windows_exporter\tls.crt`
	WindowsExporterKeyPath  = `C:\k\windows_exporter\tls.key`
	// KubeletServingCertPath is the kubelet's own serving certificate and
	// its key, in one PEM file, where the kubelet's certificate manager
	// keeps the current one (client-go util/certificate, fileStore: the
	// link kubelet-server-current.pem in --cert-dir, moved to each new
	// certificate it gets signed). Readable by SYSTEM and Administrators
	// only, as the kubelet's folder is.
	KubeletServingCertPath = KubeletCertDir + `\kubelet-server-current.pem`
	// WaitCertificateCommand is the agent's command that waits for a
	// certificate file (cmd/winnode-agent): windows_exporter's service
	// runs it before windows_exporter where the exporter serves with the
	// kubelet's certificate, which exists only once the kubelet's serving
	// CSR is approved.
	WaitCertificateCommand = "wait-certificate"
)

// WindowsExporterCollectors are the collectors an SRE needs (issue 27).
// windows_exporter's default list has neither memory nor container (and has
// physical_disk), so the list is given in full.
var WindowsExporterCollectors = []string{"cpu", "cs", "logical_disk", "memory", "net", "os", "service", "system", "container"}

// MetricsFacts are the node metrics exporter's TLS files: either a
// certificate and key of the operator's (CertPEM, Key), or the kubelet's
// own serving certificate (KubeletServing). The key is a secret: the
// renderer sees only its digest, and the caller uploads it (as the
// bootstrap kubeconfig).
type MetricsFacts struct {
	// KubeletServing serves with the kubelet's serving certificate
	// (KubeletServingCertPath): the kubelet-serving certificate of the
	// node, which names the node and its addresses, is signed by the
	// cluster's CA after winnode's approver checked it, and is renewed by
	// the kubelet. Nothing is uploaded: CertPEM and Key stay empty. It is
	// what nodes of Cluster API workload clusters serve with, whose
	// scrapers trust that cluster's CA (docs/metrics.md).
	KubeletServing bool
	// CertPEM is the serving certificate (PEM), written to
	// WindowsExporterCertPath.
	CertPEM []byte
	// Key is the digest of its private key (PEM), the caller's upload to
	// WindowsExporterKeyPath.
	Key FileDigest
}

// check refuses metrics facts the exporter could not serve with.
func (m *MetricsFacts) check() error {
	if m == nil {
		return nil
	}
	if m.KubeletServing {
		if len(m.CertPEM) > 0 || m.Key != (FileDigest{}) {
			return errors.New("node metrics: the kubelet's serving certificate and a certificate of the operator's are both given")
		}
		return nil
	}
	if !strings.Contains(string(m.CertPEM), "-----BEGIN CERTIFICATE-----") {
		return errors.New("the node metrics serving certificate is not a PEM certificate")
	}
	if m.Key.SHA256 == "" || m.Key.Size <= 0 {
		return errors.New("no digest of the node metrics serving key")
	}
	return nil
}

// webConfig is the part of exporter-toolkit's web configuration file
// (github.com/prometheus/exporter-toolkit v0.11.0, web/tls_config.go: a
// strict YAML decoding, an unknown key refused) that winnode writes.
// exporter-toolkit reads this file and the certificate files again on
// every TLS handshake (Serve sets GetConfigForClient, which calls
// ConfigToTLSConfig again), so a renewed certificate is served without a
// restart. cert_file and key_file may name one file holding both: it
// reads each with os.ReadFile and gives both to tls.X509KeyPair, which
// takes the CERTIFICATE blocks of the first and the first PRIVATE KEY
// block of the second, skipping the others.
type webConfig struct {
	TLSServerConfig struct {
		CertFile   string `json:"cert_file"`
		KeyFile    string `json:"key_file"`
		MinVersion string `json:"min_version"`
	} `json:"tls_server_config"`
}

// WindowsExporterWebConfig is the content of WindowsExporterWebConfigPath:
// TLS 1.2 or newer with the node's serving certificate: the operator's
// (WindowsExporterCertPath and WindowsExporterKeyPath) or, with
// kubeletServing, the kubelet's (KubeletServingCertPath, certificate and
// key in one file).
func WindowsExporterWebConfig(kubeletServing bool) ([]byte, error) {
	var c webConfig
	c.TLSServerConfig.CertFile = WindowsExporterCertPath
	c.TLSServerConfig.KeyFile = WindowsExporterKeyPath
	if kubeletServing {
		c.TLSServerConfig.CertFile = KubeletServingCertPath
		c.TLSServerConfig.KeyFile = KubeletServingCertPath
	}
	c.TLSServerConfig.MinVersion = "TLS12"
	out, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("windows_exporter's web configuration: %w", err)
	}
	return append([]byte("# windows_exporter --web.config.file (exporter-toolkit), written by winnode\n"), out...), nil
}

// windowsExporterFiles are its generated files: the web configuration and
// the serving certificate (the key is the caller's upload, files); only
// the web configuration where it serves with the kubelet's.
func (in RenderInput) windowsExporterFiles() ([]GeneratedFile, error) {
	if in.Metrics == nil {
		return nil, nil
	}
	web, err := WindowsExporterWebConfig(in.Metrics.KubeletServing)
	if err != nil {
		return nil, err
	}
	if in.Metrics.KubeletServing {
		return []GeneratedFile{{HostPath: WindowsExporterWebConfigPath, Content: web}}, nil
	}
	return []GeneratedFile{
		{HostPath: WindowsExporterWebConfigPath, Content: web},
		{HostPath: WindowsExporterCertPath, Content: in.Metrics.CertPEM},
	}, nil
}

// windowsExporterService runs windows_exporter.exe through
// winnode-service.exe, for its log (wrapped.go). windows_exporter would
// answer the service manager itself (its pkg/initiate runs svc.Run when
// svc.IsWindowsService says it was started by the SCM), and then logs to
// the event log or its own --log.file, which it never rotates; as the
// wrapper's child it is no service, logs to standard error (its default
// --log.file=stderr) and ends when the wrapper ends it. Its web
// configuration is in Uses: a change restarts it (the certificate and key
// are not: it reads them again on each TLS handshake).
//
// With the kubelet's serving certificate (MetricsFacts.KubeletServing),
// the file exists only once the kubelet's serving CSR is approved, some
// seconds after the kubelet joined; windows_exporter started before then
// exits at once (exporter-toolkit v0.11.0's Serve checks the files with
// ConfigToTLSConfig, and windows_exporter's main exits 1 on its error,
// "cannot start windows_exporter"), and Windows would start it again and
// again on its recovery delays, each a failure in the log and in apply's
// result. So its service first runs `winnode-agent.exe wait-certificate`
// (winnode-service.exe's --before), which waits, saying so in the
// service's log, until the file holds a certificate and its key, as
// kube-proxy's service waits for the pod subnet: the service is Running
// and windows_exporter starts as soon as it can serve.
func (in RenderInput) windowsExporterService() Service {
	s := in.windowsExporterWrapped()
	if in.Metrics.KubeletServing {
		agent, _ := in.Payload.Lookup(PayloadAgent)
		s.Args = withBefore(s.Args, agent.HostPath, WaitCertificateCommand, "--file="+KubeletServingCertPath)
	}
	return s
}

// windowsExporterWrapped is windows_exporter.exe under winnode-service.exe.
func (in RenderInput) windowsExporterWrapped() Service {
	exporter, _ := in.Payload.Lookup(PayloadWindowsExporter)
	return in.wrap(Service{
		Name:        WindowsExporterService,
		DisplayName: "Prometheus windows_exporter (node metrics)",
		Uses:        []string{WindowsExporterWebConfigPath},
		StartType:   StartAuto,
		Recovery:    serviceRecovery,
		// kingpin flags: --name=value.
	}, exporter.HostPath,
		"--web.listen-address=:"+strconv.Itoa(WindowsExporterPort),
		"--web.config.file="+WindowsExporterWebConfigPath,
		"--collectors.enabled="+strings.Join(WindowsExporterCollectors, ","))
}
