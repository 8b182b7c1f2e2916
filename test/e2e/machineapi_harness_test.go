package e2e

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/cloud"
)

// simCloud is a simulated cloud that a world's Machine controllers
// provision on: the OpenShift Machine API's (testenv
// Options.MachineAPICloudURL) or Cluster API's (Options.ClusterAPICloudURL).
// The test process serves it, so that tests can look into the hosts it
// boots. One per kind of world and test process, since the control plane
// that uses it is shared.
type simCloud struct {
	once sync.Once
	c    *cloud.Cloud
	url  string
	err  error
	// cni, when set, is the pod network the cluster's own Windows CNI
	// (played here) sets up on each host at boot.
	cni string

	mu sync.Mutex
	// powerOffs records, per instance, whether its host still had the
	// kubelet service when it was powered off.
	powerOffs map[string]bool
	unsafe    []string
	// dirs are the hosts' state folders (about 300 MB each), removed when
	// the tests end (removeHosts).
	dirs []string
}

var (
	// mapiCloud serves the openshift world, whose pod network is the
	// cluster's own (OVN-Kubernetes' place, played here).
	mapiCloud = &simCloud{cni: "OVNKubernetesHybridOverlayNetwork"}
	// capiCloud serves the capi world, which runs flannel as winnode sets
	// it up.
	capiCloud = &simCloud{}
)

// hostSubnet numbers the pod subnets the cluster's CNI hands the hosts.
var hostSubnet atomic.Int32

// serve starts the cloud once and returns its URL.
func (sc *simCloud) serve() (string, error) {
	sc.once.Do(func() {
		sc.powerOffs = map[string]bool{}
		sc.c = cloud.New(cloud.Options{
			NewHost:  sc.newHost,
			PowerOff: sc.recordPowerOff,
			Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		sc.url, _, sc.err = sc.c.Serve()
	})
	return sc.url, sc.err
}

// newHost is a Machine's simulated host: a stock Windows Server image (no
// container runtime: winnode installs containerd), and the cluster's own CNI done when
// the world has one, so that the node turns Ready once winnode has
// configured it.
func (sc *simCloud) newHost(name string) (*winsim.Host, error) {
	standin, err := testenv.BuildBinary("cmd/winsim-standin")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "winnode-e2e-machine-")
	if err != nil {
		return nil, err
	}
	sc.mu.Lock()
	sc.dirs = append(sc.dirs, dir)
	sc.mu.Unlock()
	h, err := winsim.New(winsim.Options{
		StateDir: dir, StandinBinary: standin, BootDelay: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("machine", name),
	})
	if err != nil || sc.cni == "" {
		return h, err
	}
	return h, h.SimulateClusterCNI(sc.cni, fmt.Sprintf("10.245.%d.0/24", hostSubnet.Add(1)))
}

// removeHosts powers off the hosts still running and removes every
// host's state folder: the tests have ended.
func (sc *simCloud) removeHosts() {
	if sc.c != nil {
		_ = sc.c.Close()
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, d := range sc.dirs {
		_ = os.RemoveAll(d)
	}
	sc.dirs = nil
}

// recordPowerOff notes whether the kubelet service still existed on a host
// when its instance was powered off (winnode's pre-terminate hook must
// hold the termination until the host is deconfigured), and what winnode
// ran there from where a local user could have written (issue 11).
func (sc *simCloud) recordPowerOff(name string, h *winsim.Host) {
	_, err := h.Services().Get(plan.KubeletService)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.powerOffs[name] = err == nil
	for _, e := range h.UnsafeExecs() {
		sc.unsafe = append(sc.unsafe, fmt.Sprintf("Machine %s: ran %s as Administrator although %s", name, e.Program, e.Why))
	}
}

// kubeletAtPowerOff reports whether instance name's host was powered off
// (first value) and whether its kubelet service was still there then.
func (sc *simCloud) kubeletAtPowerOff(name string) (off, kubelet bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	kubelet, off = sc.powerOffs[name]
	return off, kubelet
}

// unsafeExecs are the programs winnode ran, on any host of the cloud so
// far, from where a local user could have written (issue 11).
func (sc *simCloud) unsafeExecs() []string {
	out := []string{}
	for _, n := range sc.c.Names() {
		if h := sc.c.Host(n); h != nil {
			for _, e := range h.UnsafeExecs() {
				out = append(out, fmt.Sprintf("Machine %s: ran %s as Administrator although %s", n, e.Program, e.Why))
			}
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return append(out, sc.unsafe...)
}
