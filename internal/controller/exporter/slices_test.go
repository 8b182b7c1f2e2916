package exporter

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

func node(name, ip string, ready corev1.ConditionStatus) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.9"}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

func TestEndpoints(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes   []*corev1.Node
		want    string // "node=address ..."
		skipped string
	}{
		"ready nodes, sorted": {[]*corev1.Node{node("b", "10.0.0.2", "True"), node("a", "10.0.0.1", "True")}, "a=10.0.0.1 b=10.0.0.2", ""},
		"not ready or unknown": {[]*corev1.Node{node("a", "10.0.0.1", "False"), node("b", "10.0.0.2", "Unknown"), node("c", "10.0.0.3", "")},
			"", ""},
		"loopback":           {[]*corev1.Node{node("a", "127.0.0.10", "True")}, "", "a: its InternalIP 127.0.0.10 is a loopback"},
		"link-local":         {[]*corev1.Node{node("a", "169.254.0.9", "True")}, "", "a: its InternalIP 169.254.0.9"},
		"no InternalIP":      {[]*corev1.Node{node("a", "", "True")}, "", "a: it has no IPv4 InternalIP"},
		"IPv6 only":          {[]*corev1.Node{node("a", "fd00::1", "True")}, "", "a: it has no IPv4 InternalIP"},
		"garbled address":    {[]*corev1.Node{node("a", "ten.0.0.1", "True")}, "", "a: it has no IPv4 InternalIP"},
		"twice, and a nil":   {[]*corev1.Node{node("a", "10.0.0.1", "True"), nil, node("a", "10.0.0.9", "True")}, "a=10.0.0.1", ""},
		"one of each, mixed": {[]*corev1.Node{node("x", "10.0.0.1", "True"), node("y", "127.0.0.2", "True")}, "x=10.0.0.1", "y: its InternalIP"},
	} {
		eps, skipped := Endpoints(tc.nodes)
		var got []string
		for _, e := range eps {
			got = append(got, *e.NodeName+"="+e.Addresses[0])
			if e.TargetRef.Name != *e.NodeName || !*e.Conditions.Ready {
				t.Errorf("%s: endpoint %+v", name, e)
			}
		}
		var skips []string
		for _, s := range skipped {
			skips = append(skips, s.Node+": "+s.Reason)
		}
		if strings.Join(got, " ") != tc.want || !strings.HasPrefix(strings.Join(skips, "; "), tc.skipped) || (tc.skipped == "") != (len(skips) == 0) {
			t.Errorf("%s: %q, skipped %q; want %q, %q", name, got, skips, tc.want, tc.skipped)
		}
	}
}

// Slices hold at most MaxEndpointsPerSlice endpoints each, and there is
// always one, with the Service's labels, port and owner.
func TestDesiredSlices(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: ServiceName, UID: "u"}
	for _, n := range []int{0, 1, 100, 101, 250} {
		var nodes []*corev1.Node
		for i := 0; i < n; i++ {
			nodes = append(nodes, node(fmt.Sprintf("n%03d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), "True"))
		}
		eps, _ := Endpoints(nodes)
		got := DesiredSlices("ns", owner, eps)
		if want := max(1, (n+MaxEndpointsPerSlice-1)/MaxEndpointsPerSlice); len(got) != want {
			t.Fatalf("%d nodes: %d slices, want %d", n, len(got), want)
		}
		total := 0
		for i, s := range got {
			total += len(s.Endpoints)
			if s.Name != fmt.Sprintf("windows-exporter-%d", i) || s.Labels[discoveryv1.LabelServiceName] != ServiceName ||
				s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || *s.Ports[0].Port != 9182 || s.OwnerReferences[0] != owner ||
				len(s.Endpoints) > MaxEndpointsPerSlice || s.AddressType != discoveryv1.AddressTypeIPv4 {
				t.Errorf("%d nodes: slice %d: %+v", n, i, s)
			}
		}
		if total != n {
			t.Errorf("%d nodes: %d endpoints in all", n, total)
		}
	}
}

// A Cluster's slices have names and labels of their own, so that keepers
// sharing one cluster's Service (the operator's own, a self-hosted
// Cluster, two Clusters reaching one cluster) never list, update or delete
// each other's; a long Cluster name still makes a valid label.
func TestClusterSlices(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: ServiceName, UID: "u"}
	a := ClusterSlices(winnodev1.ClusterRef{Namespace: "capi", Name: "a"})
	b := ClusterSlices(winnodev1.ClusterRef{Namespace: "capi", Name: strings.Repeat("b", 63)})
	own := OwnSlices()
	got := a.Desired("winnode-system", owner, nil)
	if len(got) != 1 || got[0].Name != "windows-exporter-capi-a-0" || got[0].Labels[discoveryv1.LabelServiceName] != ServiceName ||
		got[0].Labels[LabelCluster] != "capi.a" {
		t.Errorf("Cluster capi/a's slices: %+v", got)
	}
	for _, set := range []SliceSet{a, b} {
		if labels.SelectorFromSet(own.Labels).Matches(labels.Set(set.Labels)) || labels.SelectorFromSet(set.Labels).Matches(labels.Set(own.Labels)) {
			t.Errorf("the operator's own slices and %s's are listed by the same labels: %v, %v", set.Prefix, own.Labels, set.Labels)
		}
		if errs := validation.IsValidLabelValue(set.Labels[LabelCluster]); len(errs) > 0 {
			t.Errorf("%s: label %q: %v", set.Prefix, set.Labels[LabelCluster], errs)
		}
	}
	if labels.SelectorFromSet(a.Labels).Matches(labels.Set(b.Labels)) {
		t.Errorf("two Clusters' slices are listed by the same labels")
	}
}

// A node's update recomputes the slices only when it can change them: a
// heartbeat (new condition times, the same status and address) does not.
func TestEndpointChanged(t *testing.T) {
	beat := func(n *corev1.Node) *corev1.Node {
		n = n.DeepCopy()
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
		}
		n.ResourceVersion = "2"
		return n
	}
	relabeled := node("a", "10.0.0.1", "True")
	relabeled.Labels = map[string]string{"team": "x"}
	windows := node("a", "10.0.0.1", "True")
	windows.Labels = map[string]string{corev1.LabelOSStable: "windows"}
	recreated := node("a", "10.0.0.1", "True")
	recreated.UID = "another"
	for name, tc := range map[string]struct {
		old, updated *corev1.Node
		want         bool
	}{
		"heartbeat":              {node("a", "10.0.0.1", "True"), beat(node("a", "10.0.0.1", "True")), false},
		"another label":          {node("a", "10.0.0.1", "True"), relabeled, false},
		"turns NotReady":         {node("a", "10.0.0.1", "True"), node("a", "10.0.0.1", "False"), true},
		"turns Ready":            {node("a", "10.0.0.1", "Unknown"), node("a", "10.0.0.1", "True"), true},
		"new address":            {node("a", "10.0.0.1", "True"), node("a", "10.0.0.2", "True"), true},
		"loses its address":      {node("a", "10.0.0.1", "True"), node("a", "", "True"), true},
		"loopback to link-local": {node("a", "127.0.0.1", "True"), node("a", "169.254.0.9", "True"), true},
		"labeled Windows":        {node("a", "10.0.0.1", "True"), windows, true},
		"deleted and recreated":  {node("a", "10.0.0.1", "True"), recreated, true},
		"no old object":          {nil, node("a", "10.0.0.1", "True"), true},
	} {
		if got := EndpointChanged(tc.old, tc.updated); got != tc.want {
			t.Errorf("%s: EndpointChanged %v, want %v", name, got, tc.want)
		}
	}
}
