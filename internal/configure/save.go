package configure

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// The CSR approver records its decision on a kubelet's first client
// certificate in the instance's status.clientCertificate, with a merge
// patch of that field alone (internal/controller/csr), before it approves.
// A kubelet often asks while its host's apply still runs, so the next save
// of that configuration pass met a conflict: the pass failed and the next
// one started again from the connection, syncing and applying a second
// time (docs/performance.md). saveOverApproval saves again over that one
// change; any other change since the last save (an administrator clearing
// status.hostKey, a new generation of the spec) is still a conflict.

// saveOverApproval answers a conflict of Persist (err): when the stored
// instance differs from the last save only by the approver's record, which
// this pass did not change, it saves inst's status again on the stored
// instance, keeping the record.
func (c *Configurer) saveOverApproval(ctx context.Context, inst *winnodev1.WindowsInstance, conflict error) error {
	if c.Reload == nil || c.saved == nil {
		return conflict
	}
	stored, err := c.Reload(ctx, inst)
	if err != nil || stored.Generation != inst.Generation || !onlyApprovalRecorded(*c.saved, stored.Status, inst.Status) {
		return conflict
	}
	c.Log.V(1).Info("saving the status again over the CSR approver's record", "instance", inst.Name)
	inst.ResourceVersion = stored.ResourceVersion
	inst.Status.ClientCertificate = stored.Status.ClientCertificate
	return c.Persist(ctx, inst)
}

// onlyApprovalRecorded says whether stored, the status stored now, differs
// from saved, the status this pass last saved, by status.clientCertificate
// alone, and ours (the status to save) leaves that field as it was saved.
func onlyApprovalRecorded(saved, stored, ours winnodev1.WindowsInstanceStatus) bool {
	if !equality.Semantic.DeepEqual(saved.ClientCertificate, ours.ClientCertificate) {
		return false // this pass changed the record itself
	}
	stored.ClientCertificate = saved.ClientCertificate
	return equality.Semantic.DeepEqual(saved, stored)
}
