package csrapproval

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/identity"
)

// minRSABits is the smallest RSA key approved (NIST SP 800-57: 2048 bits
// until 2030).
const minRSABits = 2048

// checkKey allows the key types the kubelet and Go's TLS use and nothing
// weaker: RSA of 2048 bits or more, ECDSA on P-256 or P-384, Ed25519.
func checkKey(req *x509.CertificateRequest) string {
	switch k := req.PublicKey.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return fmt.Sprintf("RSA key of %d bits; at least %d are required", k.N.BitLen(), minRSABits)
		}
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Sprintf("ECDSA key on curve %s; only P-256 and P-384 are allowed", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return fmt.Sprintf("public key of type %T; only RSA (>= %d bits), ECDSA P-256/P-384 and Ed25519 are allowed", k, minRSABits)
	}
	return ""
}

// withLimits applies the checks every approval passes, whatever the
// signer: the key. d is Decide's verdict before them.
func withLimits(csr *certificatesv1.CertificateSigningRequest, d Decision) Decision {
	if !d.Approve {
		return d
	}
	req, err := parseCSR(csr.Spec.Request)
	if err != nil {
		return leave(d.Instance, "%v", err)
	}
	if msg := checkKey(req); msg != "" {
		return leave(d.Instance, "%s", msg)
	}
	return d
}

// onePerCredential leaves a first client CSR alone when its requester (the
// join credential: a bootstrap token or join ServiceAccount) already had
// one approved: a credential is for one node's one first certificate, and a
// second would give a stolen credential's holder a key of its own for that
// node. The approved CSRs are read from the API server, so this holds
// across operator restarts.
func onePerCredential(csr *certificatesv1.CertificateSigningRequest, d Decision, facts Facts) Decision {
	if !d.Approve || facts.ApprovedClientCSRs == nil {
		return d
	}
	others := slices.DeleteFunc(facts.ApprovedClientCSRs(csr.Spec.Username, csr.Spec.UID), func(n string) bool { return n == csr.Name })
	if len(others) > 0 {
		return leave(d.Instance, "requester %s already had client CSR %s approved; a join credential gets one client certificate",
			csr.Spec.Username, strings.Join(others, ", "))
	}
	return d
}

// decideRenewal approves a winnode node's renewal of its own client
// certificate (kubeadm's "selfnodeclient" auto-approval, for nodes whose
// cluster does not bind it): the requester is system:node:<name> in group
// system:nodes, <name> the node of a Ready WindowsInstance not being
// deleted, the subject CN=system:node:<name>, O=system:nodes, no SANs,
// client-auth usages. A node gets nothing it did not have: the same
// identity, for longer.
func decideRenewal(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance) Decision {
	name := strings.TrimPrefix(csr.Spec.Username, nodeUserPrefix)
	wi := identity.OwnerOfName(name, instances)
	if wi == nil {
		return leave("", "client certificate renewal by node %s, which is not a WindowsInstance's node", name)
	}
	if !wi.DeletionTimestamp.IsZero() || wi.Status.Phase != winnodev1.PhaseReady {
		return leave(wi.Name, "client certificate renewal by node %s: WindowsInstance %s is %s, not Ready", name, wi.Name, wi.Status.Phase)
	}
	req, d := nodeRequest(csr, wi)
	if req == nil {
		return d
	}
	if n := sanCount(req); n > 0 {
		return leave(wi.Name, "client CSR carries %d subject alternative names; it must carry none", n)
	}
	if msg := checkUsages(csr.Spec.Usages, certificatesv1.UsageClientAuth); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	return Decision{Approve: true, Instance: wi.Name, Reason: fmt.Sprintf(
		"renewal of the kubelet client certificate of node %s of WindowsInstance %s, requested with its current certificate", name, wi.Name)}
}
