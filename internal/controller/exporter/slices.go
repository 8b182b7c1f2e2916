package exporter

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
)

// Names and labels of the objects this controller keeps, in the operator's
// namespace.
const (
	// ServiceName is the Service scrapers find the Windows nodes' metrics
	// through (a ServiceMonitor's selector, Prometheus' Kubernetes service
	// discovery of role endpointslice).
	ServiceName = "windows-exporter"
	// PortName is its one port's name: 9182, HTTPS.
	PortName = "metrics"
	// ManagedBy is the value of discovery.k8s.io's
	// endpointslice.kubernetes.io/managed-by on winnode's slices, so that
	// Kubernetes' EndpointSlice controller leaves them alone (it manages
	// only Services with a selector, and only slices of its own value).
	ManagedBy = "winnode.io"
	// MaxEndpointsPerSlice is how many nodes one slice lists: the default
	// of Kubernetes' EndpointSlice controller (--max-endpoints-per-slice),
	// so that a node coming or going rewrites a slice of at most 100.
	MaxEndpointsPerSlice = 100
)

// Skipped is a node left out of the slices, and why.
type Skipped struct {
	Node, Reason string
}

// Endpoints are the nodes (Windows nodes winnode configured) scrapers
// should reach: Ready, with an InternalIP
// that an EndpointSlice accepts (the API server refuses loopback,
// link-local and unspecified addresses in discovery.k8s.io/v1 slices),
// sorted by name, each once. A pure decision.
func Endpoints(nodes []*corev1.Node) ([]discoveryv1.Endpoint, []Skipped) {
	var eps []discoveryv1.Endpoint
	var skipped []Skipped
	seen := map[string]bool{}
	for _, n := range nodes {
		if n == nil || seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		if !ready(n) {
			continue // not Ready: not scraped, and not a problem to report
		}
		ip, why := internalIP(n)
		if why != "" {
			skipped = append(skipped, Skipped{Node: n.Name, Reason: why})
			continue
		}
		eps = append(eps, discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(n.Name),
			TargetRef:  &corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID, APIVersion: "v1"},
		})
	}
	slices.SortFunc(eps, func(a, b discoveryv1.Endpoint) int { return strings.Compare(*a.NodeName, *b.NodeName) })
	return eps, skipped
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// internalIP is the node's first IPv4 InternalIP, or why it has none an
// EndpointSlice of type IPv4 can list.
func internalIP(n *corev1.Node) (string, string) {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || !ip.Is4() {
			continue
		}
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
			return "", fmt.Sprintf("its InternalIP %s is a loopback, link-local or unspecified address, which an EndpointSlice may not list", ip)
		}
		return ip.String(), ""
	}
	return "", "it has no IPv4 InternalIP"
}

// SliceSet is one keeper's slices of the Service: their names (Prefix-0,
// -1, ...) and the labels they are found by. The operator's own cluster
// has one keeper; each Cluster API Cluster has its own (ClusterSlices), so
// that keepers sharing one cluster (a self-hosted Cluster beside the
// operator's own nodes, two Clusters whose kubeconfigs reach the same
// cluster) each keep only their own slices of the same Service.
type SliceSet struct {
	Prefix string
	Labels map[string]string
}

// LabelCluster names, on a workload cluster's slices, the Cluster API
// Cluster ("<namespace>.<name>", winnodev1.LabelValue) whose nodes they list.
const LabelCluster = "winnode.io/cluster"

// OwnSlices are the slices of the operator's own cluster's nodes:
// windows-exporter-0, -1, ...
func OwnSlices() SliceSet {
	return SliceSet{Prefix: ServiceName, Labels: map[string]string{
		discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: ManagedBy}}
}

// ClusterSlices are the slices of the nodes of Cluster ref in its workload
// cluster: windows-exporter-<namespace>-<name>-0, -1, ..., labelled with
// the Cluster, and with a managed-by of their own, so that the keeper of
// the operator's own cluster (OwnSlices, which lists by managed-by) never
// takes them for its own.
func ClusterSlices(ref winnodev1.ClusterRef) SliceSet {
	return SliceSet{Prefix: ServiceName + "-" + ref.Namespace + "-" + ref.Name, Labels: map[string]string{
		discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: ManagedBy + "-cluster-api",
		LabelCluster: winnodev1.LabelValue(ref.Namespace + "." + ref.Name)}}
}

// DesiredSlices are the Service's EndpointSlices for these endpoints:
// windows-exporter-0, -1, ... of at most MaxEndpointsPerSlice each, at
// least one (an empty slice says "no node" to a reader, as Kubernetes'
// controller keeps one for a Service with no endpoints).
func DesiredSlices(namespace string, owner metav1.OwnerReference, eps []discoveryv1.Endpoint) []*discoveryv1.EndpointSlice {
	return OwnSlices().Desired(namespace, owner, eps)
}

// Desired are the set's EndpointSlices for these endpoints: Prefix-0, -1,
// ... of at most MaxEndpointsPerSlice each, at least one.
func (set SliceSet) Desired(namespace string, owner metav1.OwnerReference, eps []discoveryv1.Endpoint) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for i := 0; i == 0 || i*MaxEndpointsPerSlice < len(eps); i++ {
		part := eps[i*MaxEndpointsPerSlice : min(len(eps), (i+1)*MaxEndpointsPerSlice)]
		out = append(out, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:            fmt.Sprintf("%s-%d", set.Prefix, i),
				Namespace:       namespace,
				Labels:          maps.Clone(set.Labels),
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   slices.Clone(part),
			Ports: []discoveryv1.EndpointPort{{
				Name: ptr.To(PortName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(plan.WindowsExporterPort)),
			}},
		})
	}
	return out
}

// EndpointChanged says whether a Node's update can change what Endpoints
// makes of it, or whether it is a Windows node: its Ready condition's
// status, its InternalIP, its kubernetes.io/os label. A Ready
// node's kubelet rewrites its status every minute (its conditions'
// heartbeat times), and a fleet's hundred nodes would otherwise recompute
// the slices, reading every WindowsInstance, a hundred times a minute
// with nothing to change. A pure decision.
func EndpointChanged(old, updated *corev1.Node) bool {
	if old == nil || updated == nil {
		return true
	}
	oldIP, oldWhy := internalIP(old)
	newIP, newWhy := internalIP(updated)
	return ready(old) != ready(updated) || oldIP != newIP || oldWhy != newWhy || old.UID != updated.UID ||
		old.Labels[corev1.LabelOSStable] != updated.Labels[corev1.LabelOSStable]
}
