// Package metricstls is the TLS of the Windows nodes' metrics
// (windows_exporter on port 9182, docs/metrics.md). On Kubernetes (and for
// hosts winnodectl adds): a CA winnode keeps in a Secret and publishes in a
// ConfigMap for scrapers, and a serving certificate per node, naming the
// node and its InternalIP, renewed before it expires (Store). On OpenShift:
// the certificate the platform's service CA issues for the Service
// windows-exporter, the same on every node (ServiceCA, serviceca.go).
//
// Own code rather than a library's: client-go's certificate helpers make
// self-signed pairs only (cert.GenerateSelfSignedCertKey makes its own CA
// each time); issuing from a kept CA is a few lines of crypto/x509, and
// cert-manager would be a dependency of the cluster.
package metricstls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Names of the objects, in the operator's namespace.
const (
	// CASecretName is the CA's Secret (type kubernetes.io/tls: tls.crt,
	// tls.key). Only the operator reads it.
	CASecretName = "windows-exporter-ca"
	// CAConfigMapName publishes the CA's certificate under CAKey, for
	// scrapers (the ServiceMonitor's tlsConfig.ca).
	CAConfigMapName = "windows-exporter-ca"
	CAKey           = "ca.crt"
)

// ServingValidity is how long a node's serving certificate is valid; it is
// renewed once less than a third of that is left (NeedsRenewal), which the
// operator's check of each Ready host (every few minutes) sees in time.
const ServingValidity = 90 * 24 * time.Hour

// CA is the metrics CA: its certificate and key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// NewCA makes a CA (ECDSA P-256, valid ten years: client-go's
// NewSelfSignedCACert), returning it and its key in PEM.
func NewCA() (*CA, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "winnode windows_exporter CA"}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("making the windows_exporter CA: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM := encodeCert(cert.Raw)
	return &CA{Cert: cert, CertPEM: certPEM, key: key}, keyPEM, nil
}

// ParseCA reads a CA from PEM, checking that the key is the certificate's
// and that the certificate is a CA.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("tls.crt: %w", err)
	}
	cert := certs[0]
	signer, err := keyOf(cert, keyPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("tls.crt: not a CA certificate")
	}
	return &CA{Cert: cert, CertPEM: encodeCert(cert.Raw), key: signer}, nil
}

// keyOf parses keyPEM (tls.key) and checks that it is cert's key.
func keyOf(cert *x509.Certificate, keyPEM []byte) (crypto.Signer, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls.key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("tls.key: not a signing key")
	}
	if pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(signer.Public()) {
		return nil, errors.New("tls.key is not the key of tls.crt")
	}
	return signer, nil
}

// Issue makes a serving certificate for node at ip, valid from now for
// ServingValidity, and its key, in PEM.
func (ca *CA) Issue(node string, ip net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	if node == "" || ip == nil {
		return nil, nil, fmt.Errorf("a windows_exporter serving certificate needs the node's name and address (node %q, address %v)", node, ip)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: node},
		DNSNames:     []string{node},
		IPAddresses:  []net.IP{ip},
		// A little before now: clocks of the scraper and the operator differ.
		NotBefore:   now.Add(-5 * time.Minute),
		NotAfter:    now.Add(ServingValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the windows_exporter certificate of node %s: %w", node, err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}

// NeedsRenewal says whether a node's serving certificate must be issued
// again, and why: it cannot be read, was not signed by ca (a new CA, or
// not ours), names another node or address, is not valid yet, or has less
// than a third of its validity left. A pure decision.
func NeedsRenewal(certPEM []byte, ca *x509.Certificate, node string, ip net.IP, now time.Time) (bool, string) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return true, "no readable certificate: " + err.Error()
	}
	c := certs[0]
	if err := c.CheckSignatureFrom(ca); err != nil {
		return true, "not signed by the current windows_exporter CA"
	}
	if !slices.Equal(c.DNSNames, []string{node}) || len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(ip) {
		return true, fmt.Sprintf("it names %v %v, the node is %s at %v", c.DNSNames, c.IPAddresses, node, ip)
	}
	if now.Before(c.NotBefore) {
		return true, "not valid yet"
	}
	if left := c.NotAfter.Sub(now); left < c.NotAfter.Sub(c.NotBefore)/3 {
		return true, fmt.Sprintf("it expires at %s", c.NotAfter.UTC().Format(time.RFC3339))
	}
	return false, ""
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
}
