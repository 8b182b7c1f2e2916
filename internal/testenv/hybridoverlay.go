package testenv

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The hybrid overlay's cluster side, as OVN-Kubernetes runs it in
// ovnkube-master (ovnkube-control-plane) when the hybrid overlay is
// enabled (ovn-kubernetes, go-controller/hybrid-overlay/pkg/controller/
// master.go): it watches Nodes, and gives each hybrid overlay node (a Node
// labelled kubernetes.io/os=windows, houtil.IsHybridOverlayNode) that has
// none a subnet of the hybrid cluster network in annotation
// k8s.ovn.org/hybrid-overlay-node-subnet, marking the subnets Nodes already
// have as taken when it starts and releasing a deleted Node's. The test
// world has no OVN-Kubernetes; this simulated controller plays that part so
// that ovn-hybrid runs end to end. It programs no OVN logical network.
const (
	hybridOverlaySubnetAnnotation = "k8s.ovn.org/hybrid-overlay-node-subnet"
	// defaultHostSubnetLength is the node subnet size when an entry of
	// --hybrid-overlay-cluster-subnets gives none: /24 for IPv4
	// (ovn-kubernetes, go-controller/pkg/config/utils.go,
	// ParseClusterSubnetEntries: "default for backward compatibility").
	defaultHostSubnetLength = 24
)

// HybridSubnetRange is one entry of the hybrid cluster network: a CIDR
// and the prefix length of the node subnets cut from it.
type HybridSubnetRange struct {
	CIDR             netip.Prefix
	HostSubnetLength int
}

// ParseHybridClusterSubnets reads ovn-kubernetes'
// --hybrid-overlay-cluster-subnets: comma-separated "CIDR[/hostSubnetLength]"
// entries (e.g. 10.132.0.0/14/23), the host subnet length /24 when not
// given, longer than the CIDR's own, entries not overlapping. The
// simulated controller handles IPv4 only, as Windows' hybrid overlay does.
func ParseHybridClusterSubnets(s string) ([]HybridSubnetRange, error) {
	var out []HybridSubnetRange
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		parts := strings.Split(entry, "/")
		if len(parts) != 2 && len(parts) != 3 {
			return nil, fmt.Errorf("hybrid cluster subnet %q: want CIDR or CIDR/hostSubnetLength", entry)
		}
		cidr, err := netip.ParsePrefix(parts[0] + "/" + parts[1])
		if err != nil || !cidr.Addr().Is4() {
			return nil, fmt.Errorf("hybrid cluster subnet %q: not an IPv4 CIDR", entry)
		}
		r := HybridSubnetRange{CIDR: cidr.Masked(), HostSubnetLength: defaultHostSubnetLength}
		if len(parts) == 3 {
			if r.HostSubnetLength, err = strconv.Atoi(parts[2]); err != nil {
				return nil, fmt.Errorf("hybrid cluster subnet %q: host subnet length %q is not a number", entry, parts[2])
			}
		}
		if r.HostSubnetLength <= cidr.Bits() || r.HostSubnetLength > 30 {
			return nil, fmt.Errorf("hybrid cluster subnet %q: cannot use a host subnet length /%d with a cluster subnet /%d", entry, r.HostSubnetLength, cidr.Bits())
		}
		for _, o := range out {
			if o.CIDR.Overlaps(r.CIDR) {
				return nil, fmt.Errorf("hybrid cluster subnet %q overlaps with another cluster network CIDR", entry)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// subnets lists r's node subnets in address order.
func (r HybridSubnetRange) subnets(yield func(netip.Prefix) bool) {
	base := binary.BigEndian.Uint32(r.CIDR.Addr().AsSlice())
	count := uint32(1) << (r.HostSubnetLength - r.CIDR.Bits())
	step := uint32(1) << (32 - r.HostSubnetLength)
	for i := uint32(0); i < count; i++ {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], base+i*step)
		if !yield(netip.PrefixFrom(netip.AddrFrom4(a), r.HostSubnetLength)) {
			return
		}
	}
}

// hybridOverlayMaster is the simulated controller's state: the subnets
// taken, by Node.
type hybridOverlayMaster struct {
	mu     sync.Mutex
	ranges []HybridSubnetRange
	taken  map[netip.Prefix]string
	client kubernetes.Interface
	log    io.Writer
	// handled counts, by Node, the events (add, update, resync) the
	// controller has finished handling: what tests wait on to know it
	// looked at a Node and left it alone.
	handled map[string]int
}

// StartHybridOverlayMaster runs the simulated hybrid overlay controller
// against the API server of cfg, with clusterSubnets as
// --hybrid-overlay-cluster-subnets, until ctx ends. Its log lines go to
// log and say "simulated".
func StartHybridOverlayMaster(ctx context.Context, cfg *rest.Config, clusterSubnets string, log io.Writer) error {
	_, err := startHybridOverlayMaster(ctx, cfg, clusterSubnets, log)
	return err
}

// startHybridOverlayMaster is StartHybridOverlayMaster, returning the
// controller for its tests to observe.
func startHybridOverlayMaster(ctx context.Context, cfg *rest.Config, clusterSubnets string, log io.Writer) (*hybridOverlayMaster, error) {
	ranges, err := ParseHybridClusterSubnets(clusterSubnets)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	m := &hybridOverlayMaster{ranges: ranges, taken: map[netip.Prefix]string{}, client: client, log: log, handled: map[string]int{}}
	// A resync every few seconds retries a Node whose annotation could not
	// be written (the real controller retries failed events too).
	factory := informers.NewSharedInformerFactory(client, 3*time.Second)
	nodes := factory.Core().V1().Nodes().Informer()
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.ensure(ctx, obj.(*corev1.Node)) },
		UpdateFunc: func(_, obj any) { m.ensure(ctx, obj.(*corev1.Node)) },
		DeleteFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				m.release(n)
			}
		},
	}); err != nil {
		return nil, err
	}
	// The subnets Nodes already have are taken before any is handed out.
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("simulated hybrid overlay controller: listing Nodes: %w", err)
	}
	for i := range list.Items {
		m.mark(&list.Items[i])
	}
	m.logf("Starting Hybrid Overlay Master Controller, hybrid cluster subnets %s", clusterSubnets)
	factory.Start(ctx.Done())
	return m, nil
}

// handledCount is how many events of Node name the controller has
// finished handling.
func (m *hybridOverlayMaster) handledCount(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.handled[name]
}

func (m *hybridOverlayMaster) logf(format string, args ...any) {
	fmt.Fprintf(m.log, "hybrid overlay controller (simulated ovnkube-master): "+format+"\n", args...)
}

// mark records a Node's existing hybrid subnet as taken.
func (m *hybridOverlayMaster) mark(n *corev1.Node) {
	p, err := netip.ParsePrefix(n.Annotations[hybridOverlaySubnetAnnotation])
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.taken[p.Masked()] = n.Name
}

// ensure gives a Windows Node without a hybrid subnet the first free one.
func (m *hybridOverlayMaster) ensure(ctx context.Context, n *corev1.Node) {
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.handled[n.Name]++
	}()
	if n.Labels[corev1.LabelOSStable] != "windows" {
		return
	}
	if _, ok := n.Annotations[hybridOverlaySubnetAnnotation]; ok {
		m.mark(n)
		return
	}
	subnet, fresh, ok := m.allocate(n.Name)
	if !fresh {
		// Handed out already; this is an older copy of the Node (a resync
		// before the watch brought the annotation).
		return
	}
	if !ok {
		m.logf("error allocating hybrid overlay HostSubnet for node %s: no IP subnet available", n.Name)
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		hybridOverlaySubnetAnnotation: subnet.String(),
	}}})
	if _, err := m.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		m.free(subnet)
		if ctx.Err() == nil {
			m.logf("failed to set hybrid overlay annotations for %s: %v", n.Name, err)
		}
		return
	}
	m.logf("Allocated hybrid overlay HostSubnet %s for node %s", subnet, n.Name)
}

// allocate takes the first free node subnet, in address order; fresh is
// false when the Node already has one.
func (m *hybridOverlayMaster) allocate(node string) (subnet netip.Prefix, fresh, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, owner := range m.taken {
		if owner == node {
			return s, false, true
		}
	}
	for _, r := range m.ranges {
		for s := range r.subnets {
			if _, used := m.taken[s]; !used {
				m.taken[s] = node
				return s, true, true
			}
		}
	}
	return netip.Prefix{}, true, false
}

func (m *hybridOverlayMaster) free(s netip.Prefix) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.taken, s)
}

// release gives a deleted Node's subnet back.
func (m *hybridOverlayMaster) release(n *corev1.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, owner := range m.taken {
		if owner == n.Name {
			delete(m.taken, s)
			m.logf("Deleted hybrid overlay HostSubnet %s for node %s", s, n.Name)
		}
	}
}
