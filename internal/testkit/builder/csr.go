package builder

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CSRBuilder builds a CertificateSigningRequest.
type CSRBuilder struct {
	obj certificatesv1.CertificateSigningRequest
}

// CSR starts a CertificateSigningRequest named name (empty: none, as for
// a request that is only decided on, never created).
func CSR(name string) *CSRBuilder {
	return &CSRBuilder{obj: certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// GenerateName has the API server name the request: prefix and a random
// suffix.
func (b *CSRBuilder) GenerateName(prefix string) *CSRBuilder {
	b.obj.GenerateName = prefix
	return b
}

// Request sets the PEM-encoded certificate request, its signer and the
// usages asked for.
func (b *CSRBuilder) Request(pem []byte, signer string, usages ...certificatesv1.KeyUsage) *CSRBuilder {
	b.obj.Spec.Request, b.obj.Spec.SignerName, b.obj.Spec.Usages = pem, signer, usages
	return b
}

// Requester sets who made the request, as the API server records it.
func (b *CSRBuilder) Requester(username string, groups ...string) *CSRBuilder {
	b.obj.Spec.Username, b.obj.Spec.Groups = username, groups
	return b
}

// Build returns the CertificateSigningRequest.
func (b *CSRBuilder) Build() *certificatesv1.CertificateSigningRequest {
	return b.obj.DeepCopy()
}
