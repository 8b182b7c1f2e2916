package identity

import (
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// The conflict checks (HostKeyOwner, NodeNameOwner) compare an instance
// only with the instances that have the same host key, or the same node
// name in the same cluster; the operator finds those in an index of its
// cache rather than reading every instance (internal/controller/instance).
// These are the keys of that index; the checks still decide.

// HostKeyKey is the index key of the instances that pinned hostKey.
func HostKeyKey(hostKey string) string { return "hostkey:" + hostKey }

// NodeNameKey is the index key of the instances of cluster whose node
// name (NodeNameOf) is name.
func NodeNameKey(cluster winnodev1.ClusterRef, name string) string {
	return "nodename:" + cluster.String() + "/" + name
}

// Keys are the index keys an instance is filed under: its pinned host key
// and its node name, when it has them.
func Keys(wi *winnodev1.WindowsInstance) []string {
	var keys []string
	if wi.Status.HostKey != "" {
		keys = append(keys, HostKeyKey(wi.Status.HostKey))
	}
	if name := NodeNameOf(wi); name != "" {
		keys = append(keys, NodeNameKey(wi.Spec.Cluster, name))
	}
	return keys
}
