package csrapproval

import (
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// PullMachine is what the operator knows of a Cluster API Machine in Pull
// mode (internal/capibootstrap), whose host joins its workload cluster by
// itself: there is no WindowsInstance, and every fact here comes from the
// management cluster (the Machine, its WinnodeConfig's status, its
// infrastructure's addresses), never from the host.
type PullMachine struct {
	// Config names the WinnodeConfig, "<namespace>/<name>".
	Config string
	// Cluster is the Machine's Cluster API Cluster.
	Cluster winnodev1.ClusterRef
	// NodeName is the node name winnode assigned: the WinnodeConfig's
	// status.computerName, lower-cased ("" while it has none).
	NodeName string
	// BootstrapTokenID is the public half of the bootstrap token its data
	// carries ("" once the Machine joined and the token was deleted).
	BootstrapTokenID string
	// Addresses are the Machine's status.addresses of type InternalIP
	// (the first is the address a serving certificate always may carry)
	// and ExternalIP, as its infrastructure provider reported them.
	Addresses []string
	// Created is when the WinnodeConfig was created; NameAssigned when its
	// computer name was (nil: not yet).
	Created      metav1.Time
	NameAssigned *metav1.Time
	// Deleting is set while the Machine is being deleted; Joined once it
	// has Cluster API's status.nodeRef.
	Deleting, Joined bool
}

// Instance is m in the form Decide takes, so that a Pull Machine's CSRs
// are decided by the same rules as every other host's, against every
// other host of its cluster (docs/trust.md):
//
//   - its name is "pull:<namespace>/<config>", which no WindowsInstance
//     can have;
//   - its node name is fixed as soon as its WinnodeConfig has a computer
//     name (claim 2: the node name is held against newcomers, as an
//     instance's is once a join credential was issued for it);
//   - the kubelet's first client certificate is approved only when
//     requested with its bootstrap token, for its node name, while no Node
//     of that name exists (it records no Node UID: a Pull Machine adopts
//     no Node) and the Machine is not being deleted;
//   - a serving certificate may carry its node name and its Machine's
//     InternalIP; its other addresses only inside the cluster's node
//     address CIDRs;
//   - once the Machine has a nodeRef, it is Ready: the kubelet's renewals
//     are approved.
func (m PullMachine) Instance() winnodev1.WindowsInstance {
	wi := winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{Name: PullInstancePrefix + m.Config, CreationTimestamp: m.Created},
		Spec:       winnodev1.WindowsInstanceSpec{Cluster: m.Cluster},
		Status: winnodev1.WindowsInstanceStatus{
			NodeName: strings.ToLower(m.NodeName), BootstrapTokenID: m.BootstrapTokenID,
			NodeNameFixedAt: m.NameAssigned, Phase: winnodev1.PhasePending,
		},
	}
	if m.NodeName != "" && m.NameAssigned == nil {
		wi.Status.NodeNameFixedAt = &m.Created
	}
	for _, a := range m.Addresses {
		if _, err := netip.ParseAddr(a); err != nil {
			continue
		}
		if wi.Spec.Address == "" {
			wi.Spec.Address = a
		}
		wi.Status.Addresses = append(wi.Status.Addresses, a)
	}
	if m.Deleting {
		now := metav1.Now()
		wi.DeletionTimestamp = &now
	}
	if m.Joined {
		wi.Status.Phase, wi.Status.BootstrapTokenID = winnodev1.PhaseReady, ""
	}
	return wi
}

// PullInstancePrefix starts the name of a Pull Machine's instance form
// (PullMachine.Instance): ':' is in no Kubernetes object name.
const PullInstancePrefix = "pull:"

// IsPull reports whether an instance name (a Decision's Instance) is a
// Pull Machine's.
func IsPull(instance string) bool { return strings.HasPrefix(instance, PullInstancePrefix) }
