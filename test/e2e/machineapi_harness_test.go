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

// The openshift world's Machine API (testenv Options.MachineAPICloudURL):
// the machine-api-operator's real MachineSet, Machine and node link
// controllers run beside the control plane, and their "winsim" actuator
// provisions Machines on this simulated cloud, served by the test process
// so that tests can look into the hosts it boots. One per test process,
// since the control plane that uses it is shared.
var mapiCloud struct {
	once sync.Once
	c    *cloud.Cloud
	url  string
	err  error
	// powerOffs records, per instance, whether its host still ran the
	// kubelet when it was powered off.
	mu        sync.Mutex
	powerOffs map[string]bool
	unsafe    []string
}

// hostSubnet numbers the pod subnets the cluster's CNI hands the cloud's hosts.
var hostSubnet atomic.Int32

// machineAPICloud starts the simulated cloud once and returns its URL.
func machineAPICloud() (string, error) {
	mapiCloud.once.Do(func() {
		mapiCloud.powerOffs = map[string]bool{}
		mapiCloud.c = cloud.New(cloud.Options{
			NewHost:  newCloudHost,
			PowerOff: recordPowerOff,
			Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		mapiCloud.url, _, mapiCloud.err = mapiCloud.c.Serve()
	})
	return mapiCloud.url, mapiCloud.err
}

// newCloudHost is a Machine's simulated host: containerd installed, as in
// a Windows image made for Kubernetes, and the cluster's own CNI (OVN-
// Kubernetes' place on OpenShift, played here) already done, so that the
// node turns Ready once winnode has configured it.
func newCloudHost(name string) (*winsim.Host, error) {
	standin, err := testenv.BuildBinary("cmd/winsim-standin")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "winnode-e2e-machine-")
	if err != nil {
		return nil, err
	}
	h, err := winsim.New(winsim.Options{
		StateDir: dir, StandinBinary: standin, BootDelay: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("machine", name),
	})
	if err != nil {
		return nil, err
	}
	return h, h.SimulateClusterCNI("OVNKubernetesHybridOverlayNetwork", fmt.Sprintf("10.245.%d.0/24", hostSubnet.Add(1)))
}

// recordPowerOff notes whether the kubelet service still existed on a host
// when its instance was powered off: winnode's pre-terminate hook must
// hold the termination until the host is deconfigured.
func recordPowerOff(name string, h *winsim.Host) {
	_, err := h.Services().Get(plan.KubeletService)
	mapiCloud.mu.Lock()
	defer mapiCloud.mu.Unlock()
	mapiCloud.powerOffs[name] = err == nil
	for _, e := range h.UnsafeExecs() {
		mapiCloud.unsafe = append(mapiCloud.unsafe, fmt.Sprintf("Machine %s: ran %s as Administrator although %s", name, e.Program, e.Why))
	}
}

// cloudUnsafeExecs are the programs winnode ran, on any host of the cloud
// so far, from where a local user could have written (issue 11).
func cloudUnsafeExecs() []string {
	out := []string{}
	for _, n := range mapiCloud.c.Names() {
		if h := mapiCloud.c.Host(n); h != nil {
			for _, e := range h.UnsafeExecs() {
				out = append(out, fmt.Sprintf("Machine %s: ran %s as Administrator although %s", n, e.Program, e.Why))
			}
		}
	}
	mapiCloud.mu.Lock()
	defer mapiCloud.mu.Unlock()
	return append(out, mapiCloud.unsafe...)
}

// kubeletAtPowerOff reports whether instance name's host was powered off
// (first value) and whether its kubelet service was still there then.
func kubeletAtPowerOff(name string) (off, kubelet bool) {
	mapiCloud.mu.Lock()
	defer mapiCloud.mu.Unlock()
	kubelet, off = mapiCloud.powerOffs[name]
	return off, kubelet
}
