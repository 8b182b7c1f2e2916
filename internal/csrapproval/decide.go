package csrapproval

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/hosttext"
	"github.com/winnode/winnode/internal/identity"
)

// nodeUserPrefix and nodesGroup are how the API server names a kubelet.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// Decision is what the approver makes of one CertificateSigningRequest.
type Decision struct {
	// Approve is true only when every check passed.
	Approve bool
	// Instance is the WindowsInstance the CSR belongs to ("" when none).
	Instance string
	// Reason says why it is approved or left alone, for logs and events
	// (cleaned of control characters: a CSR's names are its requester's).
	Reason string
	// Record, for an approved first client certificate, is what the
	// approver records on the instance (status.clientCertificate) before
	// it approves: the proof that a Node of that name created afterwards
	// is the host's (docs/trust.md).
	Record *winnodev1.ClientCertificate
}

func leave(instance, format string, args ...any) Decision {
	return Decision{Instance: instance, Reason: fmt.Sprintf(format, args...)}
}

// Decide decides whether a pending CSR is one the operator approves. It is
// pure: instances are the WindowsInstances of the cluster, facts what it
// needs to know of the rest of the cluster (Nodes, approved CSRs) and the
// administrator's Policy. It approves exactly (docs/approval.md says why):
//
// Kubelet client certificates (signer kubernetes.io/kube-apiserver-client-kubelet),
// the kubelet's first certificate, requested with the instance's join
// credentials (requester.go), in either form:
//   - the requester is system:bootstrap:<id>, in group system:bootstrappers:winnode,
//     and <id> is the Status.BootstrapTokenID of an instance not being deleted;
//     or the requester is system:serviceaccount:<joinNamespace>:<name>, in group
//     system:serviceaccounts:<joinNamespace>, and <name> is the
//     Status.JoinServiceAccount of an instance not being deleted (joinNamespace
//     is the operator's namespace, from its configuration, never from the CSR);
//   - the subject is CN=system:node:<that instance's Status.NodeName>, O=system:nodes
//     and nothing else;
//   - no SANs at all (DNS, IP, email, URI);
//   - usages within {digital signature, key encipherment, client auth},
//     including client auth;
//   - no other instance claims that name (identity.OwnerOfName: the one
//     with the strongest claim keeps it; a failed one without credentials
//     has none);
//   - no Node of that name exists, unless it is the one the instance
//     recorded (status.nodeUID): a client certificate for another Node of
//     that name is somebody else's business;
//   - the requester had no client CSR approved yet (onePerCredential).
//
// An approved client CSR comes with the Record the approver keeps.
//
// Renewals of a Ready winnode node's client certificate, requested with
// the node's current one (decideRenewal, limits.go).
//
// Kubelet serving certificates (signer kubernetes.io/kubelet-serving):
//   - the requester is system:node:<name> in group system:nodes, and <name> is
//     the Status.NodeName of an instance not being deleted;
//   - the subject is CN=<the requester>, O=system:nodes and nothing else;
//   - at least one SAN, each allowed by checkServingNames (names.go: the
//     node's own names and addresses, nothing of the Service domain, the
//     Service range or another Node); no email or URI SANs;
//   - usages within {digital signature, key encipherment, server auth},
//     including server auth.
//
// A Pull Machine's client and serving certificates are not approved
// while another host of its cluster keeps an address its Machine reports
// (PullAddressConflict).
//
// Every approval's key is RSA >= 2048 bits, ECDSA P-256/P-384 or Ed25519
// (checkKey). Anything else is left alone (never denied: it may be another
// approver's).
func Decide(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance, facts Facts) Decision {
	d := decide(csr, instances, facts)
	d.Reason = hosttext.Clean(d.Reason)
	if !d.Approve {
		d.Record = nil
	}
	return d
}

func decide(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance, facts Facts) Decision {
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if strings.HasPrefix(csr.Spec.Username, nodeUserPrefix) {
			return withLimits(csr, decideRenewal(csr, instances))
		}
		return withLimits(csr, onePerCredential(csr, decideClient(csr, instances, facts), facts))
	case certificatesv1.KubeletServingSignerName:
		return withLimits(csr, decideServing(csr, instances, facts))
	default:
		return leave("", "signer %q is not a kubelet signer", csr.Spec.SignerName)
	}
}

func decideClient(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance, facts Facts) Decision {
	wi, credential, d := requesterInstance(csr, instances, facts.JoinNamespace)
	if wi == nil {
		return d
	}
	nodeName := wi.Status.NodeName
	if nodeName == "" {
		return leave(wi.Name, "WindowsInstance %s has no expected node name yet", wi.Name)
	}
	if msg := PullAddressConflict(wi, instances); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	req, err := parseCSR(csr.Spec.Request)
	if err != nil {
		return leave(wi.Name, "%v", err)
	}
	if want := nodeUserPrefix + nodeName; req.Subject.CommonName != want {
		return leave(wi.Name, "CN %q, want %q", req.Subject.CommonName, want)
	}
	if msg := subjectOnlyNodes(req); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	if n := sanCount(req); n > 0 {
		return leave(wi.Name, "client CSR carries %d subject alternative names; it must carry none", n)
	}
	if msg := checkUsages(csr.Spec.Usages, certificatesv1.UsageClientAuth); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	if owner := identity.OwnerOfName(nodeName, instances); owner == nil || owner.Name != wi.Name {
		return leave(wi.Name, "node name %s of WindowsInstance %s is claimed by WindowsInstance %s", nodeName, wi.Name, ownerName(owner))
	}
	uid, exists := "", true
	if facts.NodeUID != nil {
		uid, exists = facts.NodeUID(nodeName)
	}
	if exists && (uid == "" || uid != wi.Status.NodeUID) {
		return leave(wi.Name, "Node %s already exists and is not the one WindowsInstance %s registered; only a new node's first client certificate is approved", nodeName, wi.Name)
	}
	return Decision{Approve: true, Instance: wi.Name, Reason: fmt.Sprintf(
		"kubelet client certificate for node %s of WindowsInstance %s, requested with its %s", nodeName, wi.Name, credential),
		Record: &winnodev1.ClientCertificate{CSRName: csr.Name, CSRUID: string(csr.UID), NodeName: nodeName, NodeExisted: exists, ApprovedAt: metav1.Now()}}
}

// ownerName names an owner, or says there is none.
func ownerName(wi *winnodev1.WindowsInstance) string {
	if wi == nil {
		return "(none with a claim)"
	}
	return wi.Name
}

func decideServing(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance, facts Facts) Decision {
	name, ok := strings.CutPrefix(csr.Spec.Username, nodeUserPrefix)
	if !ok || name == "" {
		return leave("", "serving CSR requested by %q, not by a node", csr.Spec.Username)
	}
	wi := identity.OwnerOfName(name, instances)
	if wi == nil {
		return leave("", "serving CSR from node %s, which is not a WindowsInstance's node", name)
	}
	if !wi.DeletionTimestamp.IsZero() {
		return leave(wi.Name, "WindowsInstance %s is being deleted", wi.Name)
	}
	if msg := PullAddressConflict(wi, instances); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	req, d := nodeRequest(csr, wi)
	if req == nil {
		return d
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return leave(wi.Name, "serving CSR carries email or URI SANs")
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return leave(wi.Name, "serving CSR carries no DNS or IP SAN")
	}
	if msg := checkServingNames(req, wi, facts); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	if msg := checkUsages(csr.Spec.Usages, certificatesv1.UsageServerAuth); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	return Decision{Approve: true, Instance: wi.Name, Reason: fmt.Sprintf(
		"kubelet serving certificate for node %s of WindowsInstance %s (SANs %v %v)", name, wi.Name, req.DNSNames, req.IPAddresses)}
}

// nodeRequest checks what a node's own request (requester
// system:node:<name>, serving or renewal) must be, whatever it asks for:
// the requester in group system:nodes, a well-signed request whose subject
// is exactly the requester, O=system:nodes. It returns the parsed request,
// or nil and the decision to leave the CSR alone.
func nodeRequest(csr *certificatesv1.CertificateSigningRequest, wi *winnodev1.WindowsInstance) (*x509.CertificateRequest, Decision) {
	if !slices.Contains(csr.Spec.Groups, nodesGroup) {
		return nil, leave(wi.Name, "requester groups %v lack %s", csr.Spec.Groups, nodesGroup)
	}
	req, err := parseCSR(csr.Spec.Request)
	if err != nil {
		return nil, leave(wi.Name, "%v", err)
	}
	if req.Subject.CommonName != csr.Spec.Username {
		return nil, leave(wi.Name, "CN %q is not the requester %q", req.Subject.CommonName, csr.Spec.Username)
	}
	if msg := subjectOnlyNodes(req); msg != "" {
		return nil, leave(wi.Name, "%s", msg)
	}
	return req, Decision{}
}

// parseCSR decodes the PEM request and checks its self-signature. (client-go
// keeps its CSR parser private; crypto/x509 does the work.)
func parseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("the request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the request does not parse: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the request's signature is invalid: %v", err)
	}
	return req, nil
}

// subjectOnlyNodes checks O is exactly [system:nodes] and the subject has no
// other attributes besides CN.
func subjectOnlyNodes(req *x509.CertificateRequest) string {
	s := req.Subject
	if len(s.Organization) != 1 || s.Organization[0] != nodesGroup {
		return fmt.Sprintf("O %v, want exactly [%s]", s.Organization, nodesGroup)
	}
	if len(s.OrganizationalUnit)+len(s.Country)+len(s.Province)+len(s.Locality)+len(s.StreetAddress)+len(s.PostalCode) > 0 || s.SerialNumber != "" {
		return "the subject has attributes besides CN and O"
	}
	return ""
}

func sanCount(req *x509.CertificateRequest) int {
	return len(req.DNSNames) + len(req.IPAddresses) + len(req.EmailAddresses) + len(req.URIs)
}

// checkUsages: usages within {digital signature, key encipherment, required}
// and containing required.
func checkUsages(usages []certificatesv1.KeyUsage, required certificatesv1.KeyUsage) string {
	allowed := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, required}
	for _, u := range usages {
		if !slices.Contains(allowed, u) {
			return fmt.Sprintf("usage %q is not allowed (allowed: %v)", u, allowed)
		}
	}
	if !slices.Contains(usages, required) {
		return fmt.Sprintf("usages %v lack %q", usages, required)
	}
	return ""
}
