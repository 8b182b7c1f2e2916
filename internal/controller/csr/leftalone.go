package csr

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/report"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/hosttext"
)

// EventReasonCSRLeftAlone is the Warning event on a CertificateSigningRequest
// that winnode did not approve, although it is a winnode host's or was made
// with a winnode join credential; its note says why.
const EventReasonCSRLeftAlone = "CSRLeftAlone"

// Values of winnode_csr_decisions_total's labels: a small fixed set. The
// reason of each decision in words is in the log line and the event.
const (
	DecisionApproved  = "approved"
	DecisionLeftAlone = "left_alone"

	// Approved: a new node's first client certificate, a Ready node's
	// client certificate renewal, a node's serving certificate.
	ReasonClient  = "client"
	ReasonRenewal = "renewal"
	ReasonServing = "serving"
	// Left alone: a CSR of no winnode host, made with no winnode join
	// credential (a Linux node's, another approver's: no event); one made
	// with a winnode join credential for a signer winnode never approves;
	// one made with a winnode join credential that no WindowsInstance holds;
	// one of a WindowsInstance's host that a rule refused.
	ReasonNotWinnode        = "not_winnode"
	ReasonNotKubeletSigner  = "not_kubelet_signer"
	ReasonUnknownCredential = "unknown_credential"
	ReasonRefusedByARule    = "refused_by_a_rule"
)

var csrDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "winnode_csr_decisions_total",
	Help: "Decisions of the CSR approver, once per CertificateSigningRequest and reason (a pending CSR decided again the same way is not counted again), " +
		"by decision (approved, left_alone) and reason (approved: client, renewal, serving; left alone: not_winnode, not_kubelet_signer, unknown_credential, refused_by_a_rule).",
}, []string{"decision", "reason"})

func init() {
	metrics.Registry.MustRegister(csrDecisions)
	// Series exist from the start, at zero, so rate() and alerts see them.
	for _, r := range []string{ReasonClient, ReasonRenewal, ReasonServing} {
		csrDecisions.WithLabelValues(DecisionApproved, r)
	}
	for _, r := range []string{ReasonNotWinnode, ReasonNotKubeletSigner, ReasonUnknownCredential, ReasonRefusedByARule} {
		csrDecisions.WithLabelValues(DecisionLeftAlone, r)
	}
}

// told is the decision last reported about one pending CSR.
type told struct {
	uid    types.UID
	reason string
}

// leftAlone reports a CSR the approver does not approve, once per CSR and
// reason: a log line, winnode_csr_decisions_total and — when the CSR is a
// winnode host's or was made with a winnode join credential — a Warning
// event CSRLeftAlone on the CSR saying why. Every change of a
// WindowsInstance decides each pending CSR again, mostly the same way:
// those repeats report nothing.
//
// The event is written with report.Event, not the recorder: client-go's
// recorders fold events that differ only in their note into the first
// one's series, and a CSR whose reason changed must show the new reason.
func (r *Approver) leftAlone(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, d csrapproval.Decision) {
	if !r.firstTime(csr, d.Reason) {
		return
	}
	reason := leftAloneReason(csr, d, r.JoinNamespace)
	csrDecisions.WithLabelValues(DecisionLeftAlone, reason).Inc()
	log := ctrl.LoggerFrom(ctx)
	log.Info("CSR left alone", "csr", csr.Name, "signer", csr.Spec.SignerName, "requester", hosttext.Clean(csr.Spec.Username), "instance", d.Instance, "reason", d.Reason)
	if reason == ReasonNotWinnode {
		return
	}
	if !r.Cluster.IsZero() {
		// The CSR of a workload cluster lives there, where winnode's
		// ServiceAccount writes no events: the log line and the metric
		// say it, and for a Pull Machine, which has no WindowsInstance to
		// tell, an event on its WinnodeConfig in the management cluster.
		r.tellPullConfig(ctx, csr, d)
		return
	}
	of := ""
	if d.Instance != "" {
		of = " of WindowsInstance " + d.Instance
	}
	note := fmt.Sprintf("winnode did not approve CSR %s%s (signer %s, requested by %s): %s. It leaves the CSR pending for any other approver; docs/approval.md lists what winnode approves",
		csr.Name, of, csr.Spec.SignerName, hosttext.Clean(csr.Spec.Username), d.Reason)
	if err := report.Event(ctx, r.Client, csr, corev1.EventTypeWarning, EventReasonCSRLeftAlone, report.ActionApprove, note); err != nil {
		log.Error(err, "could not report the CSR left alone", "csr", csr.Name)
	}
}

// countApproval counts an approval.
func countApproval(csr *certificatesv1.CertificateSigningRequest) {
	reason := ReasonClient
	switch {
	case csr.Spec.SignerName == certificatesv1.KubeletServingSignerName:
		reason = ReasonServing
	case strings.HasPrefix(csr.Spec.Username, "system:node:"):
		reason = ReasonRenewal
	}
	csrDecisions.WithLabelValues(DecisionApproved, reason).Inc()
}

// leftAloneReason is the label of a decision to leave csr alone.
func leftAloneReason(csr *certificatesv1.CertificateSigningRequest, d csrapproval.Decision, joinNamespace string) string {
	switch {
	case d.Instance != "":
		return ReasonRefusedByARule
	case !madeWithJoinCredential(csr, joinNamespace):
		return ReasonNotWinnode
	case csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName && csr.Spec.SignerName != certificatesv1.KubeletServingSignerName:
		return ReasonNotKubeletSigner
	default:
		return ReasonUnknownCredential
	}
}

// madeWithJoinCredential reports whether csr's requester is a winnode join
// credential: a bootstrap token of winnode's group, or a join
// ServiceAccount of the operator's namespace.
func madeWithJoinCredential(csr *certificatesv1.CertificateSigningRequest, joinNamespace string) bool {
	if slices.Contains(csr.Spec.Groups, bootstrap.Group) {
		return true
	}
	_, ok := bootstrap.ServiceAccountFromUsername(joinNamespace, csr.Spec.Username)
	return ok && joinNamespace != ""
}

// firstTime reports whether reason is news about csr: the first decision
// about it, or a new reason; and remembers it.
func (r *Approver) firstTime(csr *certificatesv1.CertificateSigningRequest, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[string]told{}
	}
	now := told{uid: csr.UID, reason: reason}
	if r.told[csr.Name] == now {
		return false
	}
	r.told[csr.Name] = now
	return true
}

// forget drops what was reported about CSR name: it is gone, or decided
// (approved, denied) by now.
func (r *Approver) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.told, name)
}

// tellPullConfig writes event CSRLeftAlone on the WinnodeConfig of the Pull
// Machine a CSR of a workload cluster was matched with (none for another
// CSR): the one place in the management cluster that says why its host
// does not become a node.
func (r *Approver) tellPullConfig(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, d csrapproval.Decision) {
	ns, name, ok := strings.Cut(strings.TrimPrefix(d.Instance, csrapproval.PullInstancePrefix), "/")
	if !csrapproval.IsPull(d.Instance) || !ok {
		return
	}
	cfg := &bootstrapv1.WinnodeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	note := fmt.Sprintf("winnode did not approve CSR %s of WinnodeConfig %s/%s in the workload cluster of Cluster %s (signer %s, requested by %s): %s. It leaves the CSR pending there, and decides it again while it is",
		csr.Name, ns, name, r.Cluster, csr.Spec.SignerName, hosttext.Clean(csr.Spec.Username), d.Reason)
	if err := report.Event(ctx, r.Client, cfg, corev1.EventTypeWarning, EventReasonCSRLeftAlone, report.ActionApprove, note); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "could not report the CSR left alone", "csr", csr.Name, "config", ns+"/"+name)
	}
}
