// Package csr approves the kubelet certificate requests of the hosts
// winnode manages (Approver, around the decision of internal/csrapproval)
// and warns when the cluster approves them before winnode checks them
// (AutoApprovalWarner).
package csr

import (
	"context"
	"fmt"
	"slices"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/winnode/winnode/internal/controller/report"
	"github.com/winnode/winnode/internal/csrapproval"
)

// EventReasonCSRApproved is the event on a WindowsInstance whose
// CertificateSigningRequest winnode approved.
const EventReasonCSRApproved = "CSRApproved"

// isPending reports whether nobody approved or denied the CSR yet.
func isPending(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return false
		}
	}
	return true
}

// Approver approves the kubelet CSRs of managed hosts: the reconciler
// around csrapproval.Decide, which winnodectl add calls too.
type Approver struct {
	// Client reads CSRs and WindowsInstances from the cache.
	Client client.Client
	// Kube checks Nodes against the API server (not a possibly stale cache)
	// and approves.
	Kube     kubernetes.Interface
	Recorder events.EventRecorder
	// Policy is the administrator's (--node-address-cidrs, --service-cidr);
	// the zero Policy allows spec.address only and knows no Service range.
	Policy csrapproval.Policy
	// JoinNamespace is the operator's namespace, where join ServiceAccounts
	// live: a client CSR from system:serviceaccount:<JoinNamespace>:<name>
	// is bound to the instance whose status names that ServiceAccount.
	JoinNamespace string
	// OnDecision, when set, is told every decision after it took effect
	// (tests wait on it instead of on time; the CLI can print it).
	OnDecision func(csrName string, d csrapproval.Decision)

	// told is what was reported about each pending CSR left alone, by CSR
	// name, so each is reported once per reason (leftalone.go).
	mu   sync.Mutex
	told map[string]told
}

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client-kubelet;kubernetes.io/kubelet-serving,verbs=approve
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile decides one CSR.
func (r *Approver) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var csr certificatesv1.CertificateSigningRequest
	if err := r.Client.Get(ctx, req.NamespacedName, &csr); err != nil {
		r.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !isPending(&csr) {
		r.forget(csr.Name)
		return reconcile.Result{}, nil
	}
	var instances winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &instances); err != nil {
		return reconcile.Result{}, err
	}
	facts, err := csrapproval.LoadFacts(ctx, r.Kube, r.Policy)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("deciding CSR %s: %w", csr.Name, err)
	}
	facts.JoinNamespace = r.JoinNamespace
	d := csrapproval.Decide(&csr, instances.Items, facts)
	if !d.Approve {
		r.leftAlone(ctx, &csr, d)
		r.decided(csr.Name, d)
		return reconcile.Result{}, nil
	}
	if err := csrapproval.Approve(ctx, r.Kube, &csr, "winnode-operator: "+d.Reason); err != nil {
		return reconcile.Result{}, err
	}
	log.Info("CSR approved", "csr", csr.Name, "instance", d.Instance, "reason", d.Reason)
	countApproval(&csr)
	r.forget(csr.Name)
	var wi winnodev1.WindowsInstance
	if err := r.Client.Get(ctx, client.ObjectKey{Name: d.Instance}, &wi); err == nil {
		r.Recorder.Eventf(&wi, &csr, corev1.EventTypeNormal, EventReasonCSRApproved, report.ActionApprove, "approved CSR %s: %s", csr.Name, d.Reason)
	}
	r.decided(csr.Name, d)
	return reconcile.Result{}, nil
}

func (r *Approver) decided(name string, d csrapproval.Decision) {
	if r.OnDecision != nil {
		r.OnDecision(name, d)
	}
}

// SetupWithManager watches CSRs, and WindowsInstances whose node name, token,
// addresses or phase change (a CSR that arrived early is decided again).
func (r *Approver) SetupWithManager(mgr ctrl.Manager) error {
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

// identityChanged passes instance updates that change what csrapproval.Decide
// looks at.
type identityChanged struct{ predicate.Funcs }

func (identityChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*winnodev1.WindowsInstance)
	n, ok2 := e.ObjectNew.(*winnodev1.WindowsInstance)
	if !ok1 || !ok2 {
		return true
	}
	return o.Status.NodeName != n.Status.NodeName || o.Status.Phase != n.Status.Phase || o.Status.BootstrapTokenID != n.Status.BootstrapTokenID ||
		o.Status.JoinServiceAccount != n.Status.JoinServiceAccount ||
		o.Status.Hostname != n.Status.Hostname || o.Status.FQDN != n.Status.FQDN ||
		!slices.Equal(o.Status.Addresses, n.Status.Addresses)
}
