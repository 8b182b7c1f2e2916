package configure

import (
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// servingState: which kubelet-serving CSRs say the kubelet has its serving
// certificate (issued), or will soon (pending).
func TestServingState(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	csr := func(signer, user string, age time.Duration, cert bool, cond certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequest {
		c := certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		c.Spec.SignerName, c.Spec.Username = signer, user
		if cert {
			c.Status.Certificate = []byte("PEM")
		}
		if cond != "" {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: cond}}
		}
		return c
	}
	const serving, client = certificatesv1.KubeletServingSignerName, certificatesv1.KubeAPIServerClientKubeletSignerName
	const me, other = "system:node:win-a", "system:node:win-b"
	for _, tc := range []struct {
		name            string
		csrs            []certificatesv1.CertificateSigningRequest
		issued, pending bool
	}{
		{"none", nil, false, false},
		{"signed", []certificatesv1.CertificateSigningRequest{csr(serving, me, time.Hour, true, certificatesv1.CertificateApproved)}, true, false},
		{"new and unsigned", []certificatesv1.CertificateSigningRequest{csr(serving, me, time.Minute, false, "")}, false, true},
		{"approved, not signed yet", []certificatesv1.CertificateSigningRequest{csr(serving, me, time.Minute, false, certificatesv1.CertificateApproved)}, false, true},
		{"unsigned for too long", []certificatesv1.CertificateSigningRequest{csr(serving, me, servingCSRWait+time.Second, false, "")}, false, false},
		{"denied", []certificatesv1.CertificateSigningRequest{csr(serving, me, time.Minute, false, certificatesv1.CertificateDenied)}, false, false},
		{"failed", []certificatesv1.CertificateSigningRequest{csr(serving, me, time.Minute, false, certificatesv1.CertificateFailed)}, false, false},
		{"another node's", []certificatesv1.CertificateSigningRequest{csr(serving, other, time.Minute, true, "")}, false, false},
		{"the node's client certificate", []certificatesv1.CertificateSigningRequest{csr(client, me, time.Minute, true, "")}, false, false},
		{"a denied one, then a signed one", []certificatesv1.CertificateSigningRequest{
			csr(serving, me, time.Hour, false, certificatesv1.CertificateDenied), csr(serving, me, time.Minute, true, "")}, true, false},
	} {
		issued, pending := servingState(tc.csrs, "win-a", now)
		if issued != tc.issued || pending != tc.pending {
			t.Errorf("%s: issued %v pending %v, want %v %v", tc.name, issued, pending, tc.issued, tc.pending)
		}
	}
}
