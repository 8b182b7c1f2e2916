package csrapproval

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/identity"
)

// PullMachine is what the operator knows of a Cluster API Machine in Pull
// mode (internal/capibootstrap), whose host joins its workload cluster by
// itself: there is no WindowsInstance, and every fact here comes from the
// management cluster (the Machine, its WinnodeConfig's status, its
// infrastructure's addresses), never from the host.
type PullMachine struct {
	// Config names the WinnodeConfig, "<namespace>/<name>"; Machine names
	// the Machine that owns it (in the same namespace).
	Config, Machine string
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
//   - no certificate is approved while another host of its cluster keeps
//     an address its Machine reports (PullAddressConflict);
//   - once the Machine has a nodeRef, it is Ready: the kubelet's renewals
//     are approved.
func (m PullMachine) Instance() winnodev1.WindowsInstance {
	ns, _, _ := strings.Cut(m.Config, "/")
	wi := winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{Name: PullInstancePrefix + m.Config, CreationTimestamp: m.Created},
		Spec: winnodev1.WindowsInstanceSpec{Cluster: m.Cluster,
			Source: winnodev1.SourceRef{Kind: winnodev1.SourceMachine, Namespace: ns, Name: m.Machine}},
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

// PullAddressConflict says why Pull Machine wi (its PullMachine.Instance
// form) may not have an address it reports ("" when it may): another
// Machine
// of its cluster, in Pull mode or with a WindowsInstance, reporting the
// same address and preceding it (identity.HostOwner: the stronger claim,
// then the older) keeps it, and the message names it. Two Machines reporting one address are
// one host, or a provider's mistake: the newcomer's host must not become
// a node while it claims another's address, so none of its CSRs is
// approved (docs/cluster-api.md); nor while its Machine reports no
// address at all. The Push Machines' check, made before
// their instance is created, is internal/machinesource's.
//
// Only what the management cluster says counts: a Pull Machine's
// addresses are its infrastructure provider's, a WindowsInstance's its
// spec.address (never what its host reports).
func PullAddressConflict(wi *winnodev1.WindowsInstance, instances []winnodev1.WindowsInstance) string {
	if !IsPull(wi.Name) {
		return ""
	}
	if len(trustedAddresses(wi)) == 0 {
		// Its certificates wait (the approver decides a Pull Machine's
		// pending CSRs again): approved now, a newcomer could become a node
		// before its provider reports another host's address.
		return hostOf(wi) + " reports no address yet: whether another host keeps it is told once it does"
	}
	owner := identity.HostOwner(wi, instances, func(a, b *winnodev1.WindowsInstance) bool { return sharedAddress(a, b) != "" })
	if owner == "" {
		return ""
	}
	for i := range instances {
		if o := &instances[i]; o.Name == owner {
			return fmt.Sprintf("address %s of %s is also reported by %s, which keeps it", sharedAddress(wi, o), hostOf(wi), hostOf(o))
		}
	}
	return ""
}

// sharedAddress is an address both a and b have ("" when none).
func sharedAddress(a, b *winnodev1.WindowsInstance) string {
	theirs := trustedAddresses(b)
	for _, x := range trustedAddresses(a) {
		if slices.Contains(theirs, x) {
			return x
		}
	}
	return ""
}

// trustedAddresses are the addresses the management cluster gives an
// instance form, normalized: a Pull Machine's (status.addresses, from its
// Machine), a WindowsInstance's spec.address.
func trustedAddresses(wi *winnodev1.WindowsInstance) []string {
	raw := []string{wi.Spec.Address}
	if IsPull(wi.Name) {
		raw = wi.Status.Addresses
	}
	var out []string
	for _, a := range raw {
		if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, ip.Unmap().String())
		} else if a != "" {
			out = append(out, strings.ToLower(strings.TrimSuffix(a, ".")))
		}
	}
	return out
}

// hostOf names the Machine (and instance) an instance form is of.
func hostOf(wi *winnodev1.WindowsInstance) string {
	src := wi.Spec.Source
	switch {
	case IsPull(wi.Name):
		return fmt.Sprintf("Machine %s/%s (Pull mode)", src.Namespace, src.Name)
	case src.Kind == winnodev1.SourceMachine:
		return fmt.Sprintf("Machine %s/%s (WindowsInstance %s)", src.Namespace, src.Name, wi.Name)
	}
	return "WindowsInstance " + wi.Name
}
