package standin

import (
	"context"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"

	certificatesv1 "k8s.io/api/certificates/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
)

// requestServingCert asks for a kubelet serving certificate (signer
// kubernetes.io/kubelet-serving) when serverTLSBootstrap is set, and writes
// it to --cert-dir once approved. A valid certificate already there is
// kept.
func (k *kubelet) requestServingCert(ctx context.Context) {
	certDir, err := hostPath(k.flags.certDir)
	if err != nil {
		k.log.Errorf("serving certificate: %v", err)
		return
	}
	certFile := filepath.Join(certDir, serverCertFile)
	if data, err := os.ReadFile(certFile); err == nil {
		if certs, err := certutil.ParseCertsPEM(data); err == nil && len(certs) > 0 && certs[0].NotAfter.After(timeNow()) {
			k.log.Infof("using the serving certificate in %s", certFile)
			return
		}
	}
	key, keyPEM, err := loadOrCreateKey(filepath.Join(certDir, serverKeyTemp))
	if err != nil {
		k.log.Errorf("serving certificate key: %v", err)
		return
	}
	var ips []net.IP
	if ip := net.ParseIP(k.nodeIP); ip != nil {
		ips = append(ips, ip)
	}
	subject := &pkix.Name{CommonName: "system:node:" + k.nodeName, Organization: []string{"system:nodes"}}
	csrPEM, err := certutil.MakeCSR(key, subject, []string{k.nodeName}, ips)
	if err != nil {
		k.log.Errorf("serving certificate request: %v", err)
		return
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	name, uid, err := csr.RequestCertificateWithContext(ctx, k.client, csrPEM, "", certificatesv1.KubeletServingSignerName, nil, usages, key)
	if err != nil {
		k.log.Errorf("requesting the serving certificate: %v", err)
		return
	}
	k.log.Infof("waiting for serving certificate signing request %s to be approved and signed", name)
	certPEM, err := csr.WaitForCertificate(ctx, k.client, name, uid)
	if err != nil {
		if ctx.Err() == nil {
			k.log.Errorf("serving certificate request %s: %v", name, err)
		}
		return
	}
	if err := writeFileAtomic(certFile, append(append([]byte{}, certPEM...), keyPEM...), 0o600); err != nil {
		k.log.Errorf("writing the serving certificate: %v", err)
		return
	}
	_ = os.Remove(filepath.Join(certDir, serverKeyTemp))
	k.log.Infof("serving certificate signed; written to %s", windowsForm(joinWindows(k.flags.certDir, serverCertFile)))
}
