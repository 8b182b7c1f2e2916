package identity

import (
	"strings"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// Two WindowsInstances can name one thing that only one of them may have:
// a node name (a clone reports its original's hostname), a host (one host
// listed twice, under a DNS name and under its IP) or a host key (a VM
// cloned with its SSH keys). Which one keeps it is decided here, from
// what the operator recorded, never from what a host reports now: the
// instance with the strongest claim, then the older one, then the one
// first by name.
//
// The claims, strongest first (claim):
//
//	4  its Node's UID is recorded: its host registered the Node
//	3  the CSR approver recorded a client certificate for its node name
//	2  its node name is fixed (a join credential was issued for it), or
//	   winnode began installing on its host
//	1  none of that yet, and it is neither Failed nor being deleted
//	0  none of that, and it failed a step or is being deleted: no claim
//
// So a host that failed before it had anything keeps no claim that would
// shadow another instance's, and a host that got credentials for a name
// keeps it against any newcomer reporting the same name.
func claim(wi *winnodev1.WindowsInstance) int {
	switch {
	case wi.Status.NodeUID != "":
		return 4
	case wi.Status.ClientCertificate != nil:
		return 3
	case wi.Status.NodeNameFixedAt != nil || wi.Status.HostConfigured:
		return 2
	case wi.Status.Phase == winnodev1.PhaseFailed || !wi.DeletionTimestamp.IsZero():
		return 0
	}
	return 1
}

// Precedes reports whether a keeps what both a and b claim: a has a claim
// (claim > 0) and a stronger one than b, or as strong a claim and a fixed
// node name earlier, or was created earlier, or (created at the same time)
// comes first by name.
func Precedes(a, b *winnodev1.WindowsInstance) bool {
	ca, cb := claim(a), claim(b)
	switch {
	case ca == 0:
		return false
	case ca != cb:
		return ca > cb
	}
	fa, fb := a.Status.NodeNameFixedAt, b.Status.NodeNameFixedAt
	if fa != nil && fb != nil && !fa.Equal(fb) {
		return fa.Before(fb)
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// NodeNameOf is the instance's node name: status.nodeName once the host
// reported it, else spec.nodeName (the computer name winnode assigned), or
// "" when neither is known.
func NodeNameOf(wi *winnodev1.WindowsInstance) string {
	if wi.Status.NodeName != "" {
		return wi.Status.NodeName
	}
	return strings.ToLower(wi.Spec.NodeName)
}

// NodeNameOwner names the instance among others that keeps wi's node name
// instead of wi ("" when none does, or wi has no node name yet). Node
// names are unique within one cluster: instances joining another cluster
// (another spec.cluster) hold no name against wi.
func NodeNameOwner(wi *winnodev1.WindowsInstance, others []winnodev1.WindowsInstance) string {
	name := NodeNameOf(wi)
	if name == "" {
		return ""
	}
	return firstPreceding(wi, others, func(o *winnodev1.WindowsInstance) bool {
		return o.Spec.Cluster == wi.Spec.Cluster && NodeNameOf(o) == name
	})
}

// OwnerOfName is the instance whose node name is name and that keeps it
// against every other instance of that name; nil when there is none (no
// instance has the name, or none of those has a claim). instances are
// those of one cluster (the CSR approver of each cluster passes its own).
func OwnerOfName(name string, instances []winnodev1.WindowsInstance) *winnodev1.WindowsInstance {
	var owner *winnodev1.WindowsInstance
	for i := range instances {
		wi := &instances[i]
		if name == "" || NodeNameOf(wi) != name || claim(wi) == 0 {
			continue
		}
		if owner == nil || Precedes(wi, owner) {
			owner = wi
		}
	}
	return owner
}

// HostKeyOwner names the instance among others that pinned the host key
// wi's host presented (hostKey, in authorized_keys form) and keeps that
// host instead of wi ("" when none). An instance that pinned the key keeps
// it from one that has not, whatever their claims and creation times
// (those have whole seconds: a clone's instance created in the same second
// as the owner's must not win by its name); between two that both pinned
// it, Precedes decides.
func HostKeyOwner(wi *winnodev1.WindowsInstance, hostKey string, others []winnodev1.WindowsInstance) string {
	if hostKey == "" {
		return ""
	}
	if wi.Status.HostKey != hostKey {
		for i := range others {
			if o := &others[i]; o.Name != wi.Name && o.Status.HostKey == hostKey {
				return o.Name
			}
		}
		return ""
	}
	return firstPreceding(wi, others, func(o *winnodev1.WindowsInstance) bool { return o.Status.HostKey == hostKey })
}

// HostOwner names the instance among others whose host is wi's (same
// reports whether two instances' addresses and ports reach one host:
// inventory.SameHost with a resolver) and keeps it instead of wi ("" when
// none). Addresses are compared within one cluster only (the same
// spec.cluster): the private ranges of two Cluster API clusters may
// overlap (docs/cluster-api.md). A host key identifies a host in any
// cluster (HostKeyOwner).
func HostOwner(wi *winnodev1.WindowsInstance, others []winnodev1.WindowsInstance, same func(a, b *winnodev1.WindowsInstance) bool) string {
	return firstPreceding(wi, others, func(o *winnodev1.WindowsInstance) bool {
		return o.Spec.Cluster == wi.Spec.Cluster && same(wi, o)
	})
}

// firstPreceding is the first of others (not wi itself) that match and
// precedes wi.
func firstPreceding(wi *winnodev1.WindowsInstance, others []winnodev1.WindowsInstance, match func(*winnodev1.WindowsInstance) bool) string {
	for i := range others {
		o := &others[i]
		if o.Name == wi.Name || !match(o) {
			continue
		}
		if Precedes(o, wi) {
			return o.Name
		}
	}
	return ""
}
