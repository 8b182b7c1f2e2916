package configure

import (
	"context"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/preflight"
)

// The kubelet-port check (issue 28; docs/troubleshooting.md): once the
// host's Node is Ready, at the end of each configuration and each check of
// a Ready host, the operator asks the API server for the kubelet's
// /healthz through the node proxy (GET /api/v1/nodes/NAME/proxy/healthz).
// That request is the API server dialling the kubelet at the Node's
// address and status.daemonEndpoints port, as kubectl logs, exec and
// port-forward do: a success means the API server reaches it, which a
// probe from the operator's own pod would not. winnode opens the port in
// the host's firewall, so a failure is the network's: a warning in
// status.preflight and condition Preflight, never a stop.

// EventReasonKubeletUnreachable is the Warning event of a kubelet-port
// check that newly fails.
const EventReasonKubeletUnreachable = "KubeletUnreachable"

// kubeletPortTimeout bounds the request (a firewall that drops packets
// leaves the API server's dial waiting).
const kubeletPortTimeout = 15 * time.Second

// servingCSRWait is how long after its kubelet-serving CSR was made a
// kubelet without its serving certificate is checked again soon (the
// approver signs within seconds; a CSR it left alone waits for the
// periodic check).
const servingCSRWait = 10 * time.Minute

// checkKubeletPort runs the check unless it is skipped, and records its
// result beside those of the host's last info. Until the kubelet has its
// serving certificate (serverTLSBootstrap: its CSR approved and signed) it
// cannot answer TLS and the check waits: soon is true while that CSR is
// pending, for the caller to check again soon rather than at the periodic
// check.
func (c *Configurer) checkKubeletPort(ctx context.Context, inst *winnodev1.WindowsInstance, node *corev1.Node) (soon bool) {
	skip, _ := c.skipList(inst) // the unknown names had their event at info
	if slices.Contains(skip, preflight.KubeletPort) {
		c.setPreflight(inst, withoutKubeletPort(inst), skip)
		return false
	}
	if issued, pending := c.servingCertificate(ctx, node.Name); !issued {
		return pending
	}
	wasWarning := slices.ContainsFunc(inst.Status.Preflight, func(r winnodev1.PreflightResult) bool {
		return r.Check == preflight.KubeletPort && r.Result == string(plan.PreflightWarn)
	})
	r := preflight.CheckKubeletPort(node.Name, node.Status.DaemonEndpoints.KubeletEndpoint.Port, c.kubeletHealthz(ctx, node.Name))
	if r.Result == plan.PreflightWarn && !wasWarning {
		c.event(inst, corev1.EventTypeWarning, EventReasonKubeletUnreachable, "%s", r.Message)
	}
	c.setPreflight(inst, append(withoutKubeletPort(inst), r), skip)
	return false
}

// withoutKubeletPort is status.preflight less the kubelet-port result.
func withoutKubeletPort(inst *winnodev1.WindowsInstance) []plan.PreflightResult {
	var out []plan.PreflightResult
	for _, r := range inst.Status.Preflight {
		if r.Check != preflight.KubeletPort {
			out = append(out, plan.PreflightResult{Check: r.Check, Result: plan.PreflightOutcome(r.Result), Message: r.Message})
		}
	}
	return out
}

// servingCertificate says whether a kubelet-serving certificate was issued
// for the node, and if not, whether its CSR is pending (made less than
// servingCSRWait ago, neither signed nor denied). A list that fails counts
// as issued: the probe then says what it finds.
func (c *Configurer) servingCertificate(ctx context.Context, node string) (issued, pending bool) {
	csrs, err := c.servingCSRs(ctx)
	if err != nil {
		c.Log.Info("the kubelet's serving CSRs do not list; checking its port anyway", "node", node, "error", err.Error())
		return true, false
	}
	return servingState(csrs, node, time.Now())
}

// servingState is servingCertificate's decision on the CSRs listed, at
// now: a kubelet-serving CSR of the node with a certificate is issued; one
// made less than servingCSRWait before now, neither denied nor failed, is
// pending.
func servingState(csrs []certificatesv1.CertificateSigningRequest, node string, now time.Time) (issued, pending bool) {
	for i := range csrs {
		csr := &csrs[i]
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != "system:node:"+node {
			continue
		}
		if len(csr.Status.Certificate) > 0 {
			return true, false
		}
		denied := slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
			return c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed
		})
		if !denied && now.Sub(csr.CreationTimestamp.Time) < servingCSRWait {
			pending = true
		}
	}
	return false, pending
}

// servingCSRs lists the CSRs the check looks at: every CSR of c.CSRs (the
// cache the CSR approver's watch fills, read in place: servingCertificate
// only reads them), else the kubelet-serving ones from the API server.
func (c *Configurer) servingCSRs(ctx context.Context) ([]certificatesv1.CertificateSigningRequest, error) {
	if c.CSRs != nil {
		var list certificatesv1.CertificateSigningRequestList
		err := c.CSRs.List(ctx, &list, client.UnsafeDisableDeepCopy)
		return list.Items, err
	}
	list, err := c.Kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// kubeletHealthz asks the API server for the kubelet's /healthz.
func (c *Configurer) kubeletHealthz(ctx context.Context, node string) error {
	ctx, cancel := context.WithTimeout(ctx, kubeletPortTimeout)
	defer cancel()
	return c.Kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "healthz").Do(ctx).Error()
}
