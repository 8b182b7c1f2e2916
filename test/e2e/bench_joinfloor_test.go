package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winsim"
)

// The join floor: what joining a node costs with no winnode at all. On
// each of n fresh simulated hosts, everything a kubelet needs is in place
// before the clock starts — containerd running, the pod network ready (a
// CNI configuration and its HNS network, as a cluster's CNI DaemonSet
// leaves them: winsim SimulateClusterCNI), the kubelet's program, its
// configuration and a bootstrap kubeconfig with a bootstrap token, rendered
// as winnode renders it (bootstrap.BootstrapKubeconfig) — and the clock
// runs from the kubelet services' start to the last Node Ready: TLS
// bootstrap, CSR approval and signing, Node registration, first Ready
// status. The CSRs are approved by joinFloorApprover below, a watch on
// CertificateSigningRequests that approves each kubelet client request of
// the floor's token as soon as it is created: as fast as winnode's own
// approver, which is driven by the same watch events but checks more
// before approving.

// joinFloorKubeletConfig is the floor kubelet's configuration: the
// settings a Windows kubelet needs, nothing winnode-specific.
const joinFloorKubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: npipe://./pipe/containerd-containerd
`

// joinFloor is the join floor of n hosts at once (see above).
func joinFloor(b *testing.B, w *world, n int) time.Duration {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := bootstrap.EnsureRBAC(ctx, w.kube); err != nil {
		b.Fatal(err)
	}
	tok, err := bootstrap.CreateToken(ctx, w.kube, "bench-join-floor", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = w.kube.CoreV1().Secrets(bootstrap.TokenNamespace).Delete(context.Background(), tok.SecretName(), metav1.DeleteOptions{})
	}()
	ci, err := bootstrap.LoadClusterInfo(ctx, w.kube)
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig, err := bootstrap.BootstrapKubeconfig(*ci, *tok)
	if err != nil {
		b.Fatal(err)
	}
	hosts := make([]*winsim.Host, n)
	names := make([]string, n)
	for i := range hosts {
		hosts[i] = w.newHostTuned(b, false, func(o *winsim.Options) { o.ForeignContainerd = true })
		names[i] = strings.ToLower(hosts[i].Hostname())
		prepareFloorKubelet(b, w, hosts[i], i, names[i], kubeconfig)
	}
	defer func() {
		for i, h := range hosts {
			_ = h.Close()
			_ = w.kube.CoreV1().Nodes().Delete(context.Background(), names[i], metav1.DeleteOptions{})
		}
	}()
	approved := joinFloorApprover(ctx, b, w, bootstrap.Username(tok.ID))
	ready := watchNodesReady(ctx, b, w, names)
	start := time.Now()
	for _, h := range hosts {
		if err := h.SCM().Start(ctx, "kubelet"); err != nil {
			b.Fatalf("starting the floor kubelet on %s: %v", h.Hostname(), err)
		}
	}
	select {
	case <-ready:
	case <-time.After(10 * time.Minute):
		b.Fatalf("the join floor's %d Nodes were not Ready after 10 minutes (%d CSRs approved)", n, approved.Load())
	}
	elapsed := time.Since(start)
	if got := approved.Load(); got != int64(n) {
		b.Errorf("the join floor's approver approved %d CSRs for %d kubelets", got, n)
	}
	return elapsed
}

// prepareFloorKubelet puts on h what a node join needs before its kubelet
// starts (see the comment above joinFloor) and creates the kubelet service,
// stopped.
func prepareFloorKubelet(b *testing.B, w *world, h *winsim.Host, i int, name string, kubeconfig []byte) {
	b.Helper()
	subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 250, byte(i), 0}), 24)
	if err := h.SimulateClusterCNI("floor", subnet.String()); err != nil {
		b.Fatal(err)
	}
	standin, err := os.ReadFile(w.standin)
	if err != nil {
		b.Fatal(err)
	}
	for path, data := range map[string][]byte{
		`C:\k\kubelet.exe`:          standin,
		`C:\k\kubelet.conf`:         []byte(joinFloorKubeletConfig),
		`C:\k\bootstrap-kubeconfig`: kubeconfig,
	} {
		p, err := h.Path(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	err = h.SCM().Create(context.Background(), simscm.Config{
		Name: "kubelet",
		BinaryPathName: wincmd.Join(`C:\k\kubelet.exe`, `--config=C:\k\kubelet.conf`,
			`--bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig`, `--kubeconfig=C:\k\kubeconfig`,
			`--cert-dir=C:\var\lib\kubelet\pki`, "--hostname-override="+name, "--node-ip="+h.IP(),
			"--windows-service", "--v=2"),
		Dependencies: []string{"containerd"},
		StartType:    plan.StartAuto,
	})
	if err != nil {
		b.Fatalf("the floor kubelet's service on %s: %v", h.Hostname(), err)
	}
}

// joinFloorApprover approves, as soon as the watch shows them, the kubelet
// client CSRs requested by user; it counts them.
func joinFloorApprover(ctx context.Context, b *testing.B, w *world, user string) *countApproved {
	b.Helper()
	csrs := w.kube.CertificatesV1().CertificateSigningRequests()
	wi, err := csrs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := &countApproved{}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			c, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok || ev.Type != watch.Added || c.Spec.Username != user || c.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || len(c.Status.Conditions) > 0 {
				continue
			}
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
				Reason: "BenchJoinFloor", Message: "approved by the benchmark's join floor",
			})
			if _, err := csrs.UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{}); err != nil {
				if !errors.Is(ctx.Err(), context.Canceled) {
					b.Errorf("the join floor approving %s: %v", c.Name, err)
				}
				continue
			}
			n.Add()
		}
	}()
	return n
}

// countApproved counts the CSRs approved.
type countApproved struct {
	mu sync.Mutex
	n  int64
}

func (c *countApproved) Add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *countApproved) Load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// watchNodesReady is closed once every named Node has been seen Ready.
func watchNodesReady(ctx context.Context, b *testing.B, w *world, names []string) <-chan struct{} {
	b.Helper()
	wi, err := w.kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	done := make(chan struct{})
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok || !want[node.Name] {
				continue
			}
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					delete(want, node.Name)
				}
			}
			if len(want) == 0 {
				close(done)
				return
			}
		}
	}()
	return done
}

// joinFloorFigures prints the join floor of one host and of many, and
// winnode's times over the floors that include it.
func joinFloorFigures(b *testing.B, many int, one, all, floor1, floorN, join1, joinN time.Duration) {
	figure(b, "floor_join_seconds", join1.Seconds(), "s")
	figure(b, fmt.Sprintf("floor_join_%d_hosts_seconds", many), joinN.Seconds(), "s")
	figure(b, "ratio_1_host_to_join_floor", one.Seconds()/(floor1+join1).Seconds(), "x")
	figure(b, fmt.Sprintf("ratio_%d_hosts_to_join_floor", many), all.Seconds()/(floorN+joinN).Seconds(), "x")
}
