package controller

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
)

// nodeUserPrefix and nodesGroup are how the API server names a kubelet.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// CSRDecision is what the approver makes of one CertificateSigningRequest.
type CSRDecision struct {
	// Approve is true only when every check passed.
	Approve bool
	// Instance is the WindowsInstance the CSR belongs to ("" when none).
	Instance string
	// Reason says why it is approved or left alone, for logs and events.
	Reason string
}

func leave(instance, format string, args ...any) CSRDecision {
	return CSRDecision{Instance: instance, Reason: fmt.Sprintf(format, args...)}
}

// DecideCSR decides whether a pending CSR is one the operator approves. It is
// pure: instances are the WindowsInstances of the cluster, nodeExists says
// whether a Node of a name exists. It approves exactly:
//
// Kubelet client certificates (signer kubernetes.io/kube-apiserver-client-kubelet),
// the kubelet's first certificate, requested with a bootstrap token:
//   - the requester is system:bootstrap:<id>, in group system:bootstrappers:winnode,
//     and <id> is the Status.BootstrapTokenID of an instance not being deleted;
//   - the subject is CN=system:node:<that instance's Status.NodeName>, O=system:nodes
//     and nothing else;
//   - no SANs at all (DNS, IP, email, URI);
//   - usages within {digital signature, key encipherment, client auth},
//     including client auth;
//   - no Node of that name exists yet (a second client certificate for an
//     existing node is somebody else's business).
//
// Kubelet serving certificates (signer kubernetes.io/kubelet-serving):
//   - the requester is system:node:<name> in group system:nodes, and <name> is
//     the Status.NodeName of an instance not being deleted;
//   - the subject is CN=<the requester>, O=system:nodes and nothing else;
//   - at least one SAN; DNS SANs only the node name, Status.Hostname,
//     Status.FQDN or the DNS name in Spec.Address; IP SANs only
//     Status.Addresses or the IP in Spec.Address; no email or URI SANs;
//   - usages within {digital signature, key encipherment, server auth},
//     including server auth.
//
// Anything else is left alone (never denied: it may be another approver's).
func DecideCSR(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance, nodeExists func(name string) bool) CSRDecision {
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return decideClient(csr, instances, nodeExists)
	case certificatesv1.KubeletServingSignerName:
		return decideServing(csr, instances)
	default:
		return leave("", "signer %q is not a kubelet signer", csr.Spec.SignerName)
	}
}

func decideClient(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance, nodeExists func(string) bool) CSRDecision {
	tokenID, ok := bootstrap.TokenIDFromUsername(csr.Spec.Username)
	if !ok {
		return leave("", "client CSR requested by %q, not by a bootstrap token", csr.Spec.Username)
	}
	var wi *winnodev1.WindowsInstance
	for i := range instances {
		if instances[i].Status.BootstrapTokenID == tokenID {
			wi = &instances[i]
			break
		}
	}
	if wi == nil {
		return leave("", "client CSR requested by bootstrap token %s, which no WindowsInstance was issued", tokenID)
	}
	if !wi.DeletionTimestamp.IsZero() {
		return leave(wi.Name, "WindowsInstance %s is being deleted", wi.Name)
	}
	if !slices.Contains(csr.Spec.Groups, bootstrap.Group) {
		return leave(wi.Name, "requester groups %v lack %s", csr.Spec.Groups, bootstrap.Group)
	}
	nodeName := wi.Status.NodeName
	if nodeName == "" {
		return leave(wi.Name, "WindowsInstance %s has no expected node name yet", wi.Name)
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
	if nodeExists(nodeName) {
		return leave(wi.Name, "Node %s already exists; only a new node's first client certificate is approved", nodeName)
	}
	return CSRDecision{Approve: true, Instance: wi.Name, Reason: fmt.Sprintf(
		"kubelet client certificate for node %s of WindowsInstance %s, requested with its bootstrap token %s", nodeName, wi.Name, tokenID)}
}

func decideServing(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance) CSRDecision {
	name, ok := strings.CutPrefix(csr.Spec.Username, nodeUserPrefix)
	if !ok || name == "" {
		return leave("", "serving CSR requested by %q, not by a node", csr.Spec.Username)
	}
	var wi *winnodev1.WindowsInstance
	for i := range instances {
		if instances[i].Status.NodeName != "" && instances[i].Status.NodeName == name {
			wi = &instances[i]
			break
		}
	}
	if wi == nil {
		return leave("", "serving CSR from node %s, which is not a WindowsInstance's node", name)
	}
	if !wi.DeletionTimestamp.IsZero() {
		return leave(wi.Name, "WindowsInstance %s is being deleted", wi.Name)
	}
	if !slices.Contains(csr.Spec.Groups, nodesGroup) {
		return leave(wi.Name, "requester groups %v lack %s", csr.Spec.Groups, nodesGroup)
	}
	req, err := parseCSR(csr.Spec.Request)
	if err != nil {
		return leave(wi.Name, "%v", err)
	}
	if req.Subject.CommonName != csr.Spec.Username {
		return leave(wi.Name, "CN %q is not the requester %q", req.Subject.CommonName, csr.Spec.Username)
	}
	if msg := subjectOnlyNodes(req); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return leave(wi.Name, "serving CSR carries email or URI SANs")
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return leave(wi.Name, "serving CSR carries no DNS or IP SAN")
	}
	dnsOK, ipOK := hostNames(wi)
	for _, d := range req.DNSNames {
		if !dnsOK[strings.ToLower(strings.TrimSuffix(d, "."))] {
			return leave(wi.Name, "DNS SAN %q is not a name of WindowsInstance %s's host (%v)", d, wi.Name, keys(dnsOK))
		}
	}
	for _, ip := range req.IPAddresses {
		if !ipOK[ip.String()] {
			return leave(wi.Name, "IP SAN %s is not an address of WindowsInstance %s's host (%v)", ip, wi.Name, keys(ipOK))
		}
	}
	if msg := checkUsages(csr.Spec.Usages, certificatesv1.UsageServerAuth); msg != "" {
		return leave(wi.Name, "%s", msg)
	}
	return CSRDecision{Approve: true, Instance: wi.Name, Reason: fmt.Sprintf(
		"kubelet serving certificate for node %s of WindowsInstance %s (SANs %v %v)", name, wi.Name, req.DNSNames, req.IPAddresses)}
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

// hostNames are the DNS names and IPs a managed host's serving certificate
// may carry.
func hostNames(wi *winnodev1.WindowsInstance) (dns, ips map[string]bool) {
	dns, ips = map[string]bool{}, map[string]bool{}
	for _, n := range []string{wi.Status.NodeName, wi.Status.Hostname, wi.Status.FQDN} {
		if n != "" {
			dns[strings.ToLower(strings.TrimSuffix(n, "."))] = true
		}
	}
	for _, a := range wi.Status.Addresses {
		if ip := net.ParseIP(a); ip != nil {
			ips[ip.String()] = true
		}
	}
	if ip := net.ParseIP(wi.Spec.Address); ip != nil {
		ips[ip.String()] = true
	} else if wi.Spec.Address != "" {
		dns[strings.ToLower(strings.TrimSuffix(wi.Spec.Address, "."))] = true
	}
	return dns, ips
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// isPending reports whether nobody approved or denied the CSR yet.
func isPending(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return false
		}
	}
	return true
}

// ApproveCSR adds the Approved condition through the approval subresource.
// winnodectl add calls it for its own host after DecideCSR approved.
func ApproveCSR(ctx context.Context, kube kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, message string) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:           certificatesv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         "WinnodeApproved",
		Message:        message,
		LastUpdateTime: metav1.Now(),
	})
	if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approving CSR %s: %w", csr.Name, err)
	}
	return nil
}

// CSRApprover approves the kubelet CSRs of managed hosts (DecideCSR).
type CSRApprover struct {
	// Client reads CSRs and WindowsInstances from the cache.
	Client client.Client
	// Kube checks Nodes against the API server (not a possibly stale cache)
	// and approves.
	Kube     kubernetes.Interface
	Recorder events.EventRecorder
	// OnDecision, when set, is told every decision after it took effect
	// (tests wait on it instead of on time; the CLI can print it).
	OnDecision func(csrName string, d CSRDecision)
}

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client-kubelet;kubernetes.io/kubelet-serving,verbs=approve
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile decides one CSR.
func (r *CSRApprover) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var csr certificatesv1.CertificateSigningRequest
	if err := r.Client.Get(ctx, req.NamespacedName, &csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !isPending(&csr) {
		return reconcile.Result{}, nil
	}
	var instances winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &instances); err != nil {
		return reconcile.Result{}, err
	}
	var lookupErr error
	nodeExists := func(name string) bool {
		_, err := r.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			lookupErr = err
			return true // unsure: do not approve
		}
		return err == nil
	}
	d := DecideCSR(&csr, instances.Items, nodeExists)
	if lookupErr != nil {
		return reconcile.Result{}, fmt.Errorf("checking whether the Node of CSR %s exists: %w", csr.Name, lookupErr)
	}
	if !d.Approve {
		log.Info("CSR left alone", "csr", csr.Name, "signer", csr.Spec.SignerName, "requester", csr.Spec.Username, "instance", d.Instance, "reason", d.Reason)
		r.decided(csr.Name, d)
		return reconcile.Result{}, nil
	}
	if err := ApproveCSR(ctx, r.Kube, &csr, "winnode-operator: "+d.Reason); err != nil {
		return reconcile.Result{}, err
	}
	log.Info("CSR approved", "csr", csr.Name, "instance", d.Instance, "reason", d.Reason)
	var wi winnodev1.WindowsInstance
	if err := r.Client.Get(ctx, client.ObjectKey{Name: d.Instance}, &wi); err == nil {
		r.Recorder.Eventf(&wi, &csr, corev1.EventTypeNormal, EventReasonCSRApproved, ActionApprove, "approved CSR %s: %s", csr.Name, d.Reason)
	}
	r.decided(csr.Name, d)
	return reconcile.Result{}, nil
}

func (r *CSRApprover) decided(name string, d CSRDecision) {
	if r.OnDecision != nil {
		r.OnDecision(name, d)
	}
}

// SetupWithManager watches CSRs, and WindowsInstances whose node name, token
// or addresses change (a CSR that arrived early is decided again).
func (r *CSRApprover) SetupWithManager(mgr ctrl.Manager) error {
	pendingCSRs := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list certificatesv1.CertificateSigningRequestList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			if isPending(&list.Items[i]) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("csr-approver").
		For(&certificatesv1.CertificateSigningRequest{}).
		Watches(&winnodev1.WindowsInstance{}, pendingCSRs, builder.WithPredicates(identityChanged{})).
		Complete(r)
}

// identityChanged passes instance updates that change what DecideCSR looks at.
type identityChanged struct{ predicate.Funcs }

func (identityChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*winnodev1.WindowsInstance)
	n, ok2 := e.ObjectNew.(*winnodev1.WindowsInstance)
	if !ok1 || !ok2 {
		return true
	}
	return o.Status.NodeName != n.Status.NodeName || o.Status.BootstrapTokenID != n.Status.BootstrapTokenID ||
		o.Status.Hostname != n.Status.Hostname || o.Status.FQDN != n.Status.FQDN ||
		!slices.Equal(o.Status.Addresses, n.Status.Addresses)
}
