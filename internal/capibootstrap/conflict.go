package capibootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/workload"
)

// EventReasonInstanceConflict is the Warning event on a Pull Machine that
// reports an address another Machine of its cluster keeps: the reason of
// a Push Machine's (internal/machinesource), whose instance is then never
// created.
const EventReasonInstanceConflict = "InstanceConflict"

// Whether a Pull Machine's address is another's (the WindowsInstances of
// its cluster).
// +kubebuilder:rbac:groups=winnode.io,resources=windowsinstances,verbs=get;list;watch

// checkAddressConflict tells whether Machine machine, not joined yet,
// reports an address another host of its workload cluster keeps
// (csrapproval.PullAddressConflict, the rule by which the CSR approver
// then approves none of its host's CSRs): condition NodeJoined False with
// reason InstanceConflict, and a Warning event InstanceConflict on the
// Machine when that is news. A Pull host cannot be kept from running its
// bootstrap data; what it is denied is to become a node. Once the
// conflict is gone, the wait for the node starts afresh.
func (r *Reconciler) checkAddressConflict(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, wc *workload.Cluster) (bool, error) {
	msg, err := r.addressConflict(ctx, cfg, machine, wc.Ref)
	if err != nil {
		return false, err
	}
	if msg == "" {
		if c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined); c != nil && c.Reason == bootstrapv1.ReasonInstanceConflict {
			meta.RemoveStatusCondition(&cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined)
		}
		return false, nil
	}
	msg = fmt.Sprintf("Machine %s may not join the workload cluster of Cluster %s: %s; winnode approves none of its host's CSRs, so it does not become a node. "+
		"Correct the Machine's address, or delete this Machine (or the other, if this is the one to keep)", machine.Name, wc.Ref, msg)
	if setJoined(cfg, metav1.ConditionFalse, bootstrapv1.ReasonInstanceConflict, msg) {
		r.Recorder.Eventf(machine, cfg, corev1.EventTypeWarning, EventReasonInstanceConflict, ActionJoin, "%s", msg)
	}
	return true, nil
}

// addressConflict is csrapproval.PullAddressConflict for cfg's Machine,
// against the WindowsInstances joining cluster (the manager's cache, as
// the CSR approver reads them: this runs on every pass of a Machine not
// joined yet) and its other Pull Machines, all of the management cluster.
func (r *Reconciler) addressConflict(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, cluster winnodev1.ClusterRef) (string, error) {
	var list winnodev1.WindowsInstanceList
	if err := r.Cache.List(ctx, &list); err != nil {
		return "", fmt.Errorf("listing WindowsInstances to check Machine %s/%s's addresses: %w", machine.Namespace, machine.Name, err)
	}
	var all []winnodev1.WindowsInstance
	for _, wi := range list.Items {
		if wi.Spec.Cluster == cluster {
			all = append(all, wi)
		}
	}
	pull, err := (&PullMachines{Configs: r.Cache, Machines: r.Reader}).Instances(ctx, cluster)
	if err != nil {
		return "", fmt.Errorf("listing the Pull Machines of Cluster %s: %w", cluster, err)
	}
	self := pullMachine(cfg, machine, cluster).Instance()
	if len(self.Status.Addresses) == 0 {
		return "", nil // nothing to compare yet (its CSRs wait for an address)
	}
	return csrapproval.PullAddressConflict(&self, append(all, pull...)), nil
}
