// Package csr approves the kubelet certificate requests of the hosts
// winnode manages (Approver, around the decision of internal/csrapproval)
// and warns when the cluster approves them before winnode checks them
// (AutoApprovalWarner).
package csr

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// Cluster is the Cluster API Cluster whose workload cluster's CSRs this
	// approver decides (workload.go): only the instances joining that
	// cluster (spec.cluster) are matched. Zero: the operator's own cluster,
	// and only the instances without spec.cluster.
	Cluster winnodev1.ClusterRef
	// CSRs reads the CSRs (default: Client).
	CSRs client.Reader
	// APIServer reads the names and addresses of the API server's serving
	// certificate, which no node's certificate may carry. Nil: none known.
	APIServer *csrapproval.APIServerCertificate
	// Pull, when set, gives the Cluster API Machines in Pull mode joining
	// the approver's cluster, in the form Decide takes
	// (csrapproval.PullMachine): they have no WindowsInstance, and their
	// CSRs are decided by the same rules, against the same hosts.
	Pull PullMachines
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
// Whether the node DNS policy is in force (csrapproval.NodeDNSPolicyEnforced),
// by name only.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,resourceNames=winnode-node-dns-addresses,verbs=get

// Reconcile decides one CSR.
func (r *Approver) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var csr certificatesv1.CertificateSigningRequest
	if err := r.csrs().Get(ctx, req.NamespacedName, &csr); err != nil {
		r.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !isPending(&csr) {
		r.forget(csr.Name)
		return reconcile.Result{}, nil
	}
	instances, err := r.instances(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	facts, err := r.facts(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("deciding CSR %s: %w", csr.Name, err)
	}
	d := csrapproval.Decide(&csr, instances, facts)
	if !d.Approve {
		r.leftAlone(ctx, &csr, d)
		r.decided(csr.Name, d)
		if csrapproval.IsPull(d.Instance) {
			// Nothing of a Pull Machine wakes this approver (its Machine's
			// addresses, a Node gone): look again while the CSR is pending.
			return reconcile.Result{RequeueAfter: pullRecheck}, nil
		}
		return reconcile.Result{}, nil
	}
	if csrapproval.IsPull(d.Instance) {
		// No WindowsInstance to record on or to tell: the Machine's
		// WinnodeConfig is followed by its Node (capibootstrap).
		if err := csrapproval.Approve(ctx, r.Kube, &csr, "winnode-operator: "+d.Reason); err != nil {
			return reconcile.Result{}, err
		}
		log.Info("CSR approved", "csr", csr.Name, "machine", d.Instance, "reason", d.Reason)
		countApproval(&csr)
		r.forget(csr.Name)
		r.decided(csr.Name, d)
		return reconcile.Result{}, nil
	}
	if err := r.record(ctx, d); err != nil {
		return reconcile.Result{}, err
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

// csrs reads CSRs: from CSRs, or the manager's client.
func (r *Approver) csrs() client.Reader {
	if r.CSRs != nil {
		return r.CSRs
	}
	return r.Client
}

// instances are the WindowsInstances joining the approver's cluster, and
// its Pull Machines: a CSR of one cluster never matches a host of
// another.
func (r *Approver) instances(ctx context.Context) ([]winnodev1.WindowsInstance, error) {
	var list winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	mine := list.Items[:0]
	for _, wi := range list.Items {
		if wi.Spec.Cluster == r.Cluster {
			mine = append(mine, wi)
		}
	}
	if r.Pull == nil || r.Cluster.IsZero() {
		return mine, nil
	}
	pull, err := r.Pull.Instances(ctx, r.Cluster)
	if err != nil {
		return nil, fmt.Errorf("listing the Pull Machines of Cluster %s: %w", r.Cluster, err)
	}
	return append(mine, pull...), nil
}

// PullMachines gives the Pull-mode Machines of a Cluster API Cluster
// (internal/capibootstrap.PullMachines).
type PullMachines interface {
	Instances(ctx context.Context, cluster winnodev1.ClusterRef) ([]winnodev1.WindowsInstance, error)
}

// pullRecheck is how soon a pending CSR of a Pull Machine that was left
// alone is decided again.
const pullRecheck = 10 * time.Second

// facts are what a decision knows of the cluster, read afresh.
func (r *Approver) facts(ctx context.Context) (csrapproval.Facts, error) {
	facts, err := csrapproval.LoadFacts(ctx, r.Kube, r.Policy)
	if err != nil {
		return facts, err
	}
	facts.JoinNamespace = r.JoinNamespace
	if r.APIServer != nil {
		if facts.APIServerNames, facts.APIServerIPs, err = r.APIServer.Read(ctx); err != nil {
			return facts, err
		}
	}
	return facts, nil
}

// record keeps the approver's decision on a first client certificate in
// its instance's status (status.clientCertificate) before the approval: a
// Node of that name created afterwards is then provably the host's
// (docs/trust.md). A merge patch of that field alone, so that it never
// overwrites what the instance reconciler writes.
func (r *Approver) record(ctx context.Context, d csrapproval.Decision) error {
	if d.Record == nil {
		return nil
	}
	data, err := json.Marshal(map[string]any{"status": map[string]any{"clientCertificate": d.Record}})
	if err != nil {
		return err
	}
	wi := &winnodev1.WindowsInstance{ObjectMeta: metav1.ObjectMeta{Name: d.Instance}}
	if err := r.Client.Status().Patch(ctx, wi, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("recording the approval of CSR %s on WindowsInstance %s: %w", d.Record.CSRName, d.Instance, err)
	}
	return nil
}

func (r *Approver) decided(name string, d csrapproval.Decision) {
	if r.OnDecision != nil {
		r.OnDecision(name, d)
	}
}

// SetupWithManager watches CSRs, and WindowsInstances whose node name, token,
// addresses or phase change (a CSR that arrived early is decided again).
func (r *Approver) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("csr-approver").
		For(&certificatesv1.CertificateSigningRequest{}).
		Watches(&winnodev1.WindowsInstance{}, handler.EnqueueRequestsFromMapFunc(r.pendingCSRs), builder.WithPredicates(identityChanged{})).
		Complete(r)
}

// pendingCSRs enqueues every pending CSR (an instance changed what
// csrapproval.Decide looks at).
func (r *Approver) pendingCSRs(ctx context.Context, _ client.Object) []reconcile.Request {
	var list certificatesv1.CertificateSigningRequestList
	if err := r.csrs().List(ctx, &list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if isPending(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
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
		o.Status.NodeUID != n.Status.NodeUID || (o.Status.NodeNameFixedAt == nil) != (n.Status.NodeNameFixedAt == nil) ||
		(o.Status.ClientCertificate == nil) != (n.Status.ClientCertificate == nil) || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
		o.Status.JoinServiceAccount != n.Status.JoinServiceAccount ||
		o.Status.Hostname != n.Status.Hostname || o.Status.FQDN != n.Status.FQDN ||
		!slices.Equal(o.Status.Addresses, n.Status.Addresses)
}
