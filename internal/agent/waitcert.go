package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"io/fs"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/winnode/winnode/internal/plan"
)

// WaitCertificateOptions are the inputs of `winnode-agent wait-certificate`.
type WaitCertificateOptions struct {
	// File is the certificate file waited for (a host path; default
	// plan.KubeletServingCertPath).
	File string
	// PollInterval is how often the file is read (default 1s).
	PollInterval time.Duration
}

// WaitCertificateDocument is what `winnode-agent wait-certificate` prints:
// the file and when its certificate expires.
type WaitCertificateDocument struct {
	SchemaVersion string    `json:"schemaVersion"`
	File          string    `json:"file"`
	NotAfter      time.Time `json:"notAfter"`
}

// WaitCertificate waits until o.File holds a certificate and its private
// key, loaded as windows_exporter's exporter-toolkit loads its cert_file
// and key_file when both name that file (tls.X509KeyPair of its content
// twice). windows_exporter's service runs it before windows_exporter
// (winnode-service.exe --before) where the exporter serves with the
// kubelet's serving certificate, which exists only once the kubelet's
// serving CSR is approved: windows_exporter exits at once without it
// (internal/plan, windowsexporter.go). It says in the log what it waits
// for each time that changes, and waits until ctx ends (the service's
// stop). It takes no lock and writes nothing.
func (a *Agent) WaitCertificate(ctx context.Context, o WaitCertificateOptions) (*WaitCertificateDocument, error) {
	if o.File == "" {
		o.File = plan.KubeletServingCertPath
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	local, err := a.localPath(o.File)
	if err != nil {
		return nil, err
	}
	var cert tls.Certificate
	last := ""
	err = wait.PollUntilContextCancel(ctx, o.PollInterval, true, func(context.Context) (bool, error) {
		var state string
		cert, state = loadKeyPair(local, o.File)
		if state == "" {
			return true, nil
		}
		if state != last {
			a.Log.Info("waiting", "for", state)
			last = state
		}
		return false, nil
	})
	if err != nil {
		return nil, plan.Errorf(plan.ErrNotJoined, "stopped while waiting: %s", last)
	}
	a.Log.Info("certificate ready", "file", o.File, "notAfter", cert.Leaf.NotAfter)
	return &WaitCertificateDocument{SchemaVersion: plan.SchemaVersion, File: o.File, NotAfter: cert.Leaf.NotAfter}, nil
}

// loadKeyPair reads the certificate and key in one PEM file, or says what
// is missing ("": nothing).
func loadKeyPair(local, file string) (tls.Certificate, string) {
	data, err := os.ReadFile(local)
	if errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, file + " does not exist yet (the kubelet writes it once its serving certificate is signed)"
	}
	if err != nil {
		return tls.Certificate{}, "reading " + file + ": " + err.Error()
	}
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return tls.Certificate{}, file + " holds no certificate and key: " + err.Error()
	}
	return cert, ""
}
