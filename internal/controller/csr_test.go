package controller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// The CSR decision's own tests are in internal/csrapproval; these helpers
// (the same as there) make the requests of the approver's tests here.

// csrTemplate describes a certificate request for tests.
type csrTemplate struct {
	CN     string
	O      []string
	OU     []string
	DNS    []string
	IPs    []string
	Emails []string
	URIs   []string
}

func makeCSRPEM(t testing.TB, tmpl csrTemplate) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	req := &x509.CertificateRequest{
		Subject:        pkix.Name{CommonName: tmpl.CN, Organization: tmpl.O, OrganizationalUnit: tmpl.OU},
		DNSNames:       tmpl.DNS,
		EmailAddresses: tmpl.Emails,
	}
	for _, ip := range tmpl.IPs {
		req.IPAddresses = append(req.IPAddresses, net.ParseIP(ip))
	}
	for _, u := range tmpl.URIs {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		req.URIs = append(req.URIs, pu)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, req, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

var clientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
var servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
