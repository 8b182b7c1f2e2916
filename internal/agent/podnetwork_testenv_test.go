//go:build !windows

package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winpath"
)

// pod-network against the real control plane, with the node's own
// credentials (a client certificate of system:node:NAME in system:nodes,
// which the Node authorizer lets read its own Node only, and list and
// watch it only by a field selector on its name): it watches the Node,
// says what it waits for, ends naming the Node and what it lacked when
// stopped, and returns at the event that brings the subnet. Each run
// makes at most a list and a watch of that one Node, never a poll.
func TestPodNetworkWatchesTheNode(t *testing.T) {
	env := testenv.Get(t)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const node = "win-podnet-watch"
	root := tempDir(t)
	writeNodeCredentials(t, env, root, node)
	writeHybridSettings(t, root, node)
	for _, f := range plan.SubnetFiles { // the folders apply makes
		wp, _ := winpath.Parse(f)
		local, _ := rootPlatform{root: root}.LocalPath(wp)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	noSubnet := "Node " + node + " has no pod subnet yet (annotation " + plan.HybridOverlaySubnetAnnotation

	// Stopped while the Node has no subnet: the error says so.
	stopCtx, stop := context.WithCancel(ctx)
	run := startPodNetwork(stopCtx, root, noSubnet)
	run.waitLogged(ctx, t)
	stop()
	if r := run.result(ctx, t); r.err == nil || !strings.Contains(r.err.Error(), "stopped while waiting for Node "+node+"'s pod subnet: "+noSubnet) {
		t.Errorf("stopped: %v, %+v; log:\n%s", r.err, r.doc, run.log.text())
	}
	run.requests.check(t, node)

	// The subnet set while it waits: it returns with it.
	run = startPodNetwork(ctx, root, noSubnet)
	run.waitLogged(ctx, t)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{plan.HybridOverlaySubnetAnnotation: "10.132.7.0/24"}}})
	if _, err := kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r := run.result(ctx, t)
	if r.err != nil || r.doc.PodCIDR != "10.132.7.0/24" || len(r.doc.Files) != len(plan.SubnetFiles) {
		t.Fatalf("after the subnet was set: %v, %+v; log:\n%s", r.err, r.doc, run.log.text())
	}
	conf, _ := winpath.Parse(plan.CNIConfPath)
	local, _ := rootPlatform{root: root}.LocalPath(conf)
	if data, err := os.ReadFile(local); err != nil || !strings.Contains(string(data), "10.132.7.0/24") {
		t.Errorf("CNI configuration: %v\n%s", err, data)
	}
	run.requests.check(t, node)
}

// writeNodeCredentials writes the kubeconfig the kubelet would write
// after its TLS bootstrap (plan.KubeconfigPath): the node's own identity.
func writeNodeCredentials(t *testing.T, env *testenv.Env, root, node string) {
	t.Helper()
	kubeconfig, err := env.UserKubeconfig("system:node:"+node, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(root, "k", "kubeconfig"), data)
}

// writeHybridSettings writes the ovn-hybrid pod network settings the plan
// installs for node: its subnet is an annotation the test sets, which
// nothing else in the test world sets on a Node not labelled Windows.
func writeHybridSettings(t *testing.T, root, node string) {
	t.Helper()
	data, err := json.Marshal(plan.PodNetwork{NodeName: node, Network: plan.NetworkFacts{Mode: plan.NetworkOVNHybrid,
		ClusterCIDR: "10.132.0.0/14", ServiceCIDR: testenv.ServiceCIDR, NetworkName: plan.HybridOverlayNetwork}})
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(root, "k", "pod-network.json"), data)
}

func writeTestFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// podNetworkRun is one PodNetwork running in the background.
type podNetworkRun struct {
	log      *signalLog
	requests *requestLog
	done     chan podNetworkResult
}

type podNetworkResult struct {
	doc *PodNetworkDocument
	err error
}

// startPodNetwork starts PodNetwork on root; its run tells when its log
// says logged.
func startPodNetwork(ctx context.Context, root, logged string) *podNetworkRun {
	run := &podNetworkRun{log: &signalLog{want: logged, seen: make(chan struct{})}, requests: &requestLog{}, done: make(chan podNetworkResult, 1)}
	a := &Agent{Platform: rootPlatform{root: root}, Log: slog.New(slog.NewTextHandler(run.log, nil)), nodeTransport: run.requests.wrap}
	go func() {
		doc, err := a.PodNetwork(ctx, PodNetworkOptions{})
		run.done <- podNetworkResult{doc, err}
	}()
	return run
}

// waitLogged waits until the run logs what it was started to look for.
func (r *podNetworkRun) waitLogged(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-r.log.seen:
	case res := <-r.done:
		t.Fatalf("ended before logging %q: %v, %+v; log:\n%s", r.log.want, res.err, res.doc, r.log.text())
	case <-ctx.Done():
		t.Fatalf("never logged %q; log:\n%s", r.log.want, r.log.text())
	}
}

// result waits for the run's end.
func (r *podNetworkRun) result(ctx context.Context, t *testing.T) podNetworkResult {
	t.Helper()
	select {
	case res := <-r.done:
		return res
	case <-ctx.Done():
		t.Fatalf("pod-network still waiting; log:\n%s", r.log.text())
		return podNetworkResult{}
	}
}

// signalLog is a log that closes seen once a line holds want.
type signalLog struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (l *signalLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if strings.Contains(string(p), l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return len(p), nil
}

func (l *signalLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// requestLog records the requests made with the node's credentials.
type requestLog struct {
	mu   sync.Mutex
	reqs []*url.URL
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, req.URL)
		l.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// check: a list and a watch of the one Node at most (client-go's watch
// list makes it one watch), each by a field selector on its name.
func (l *requestLog) check(t *testing.T, node string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("requests with the node's credentials: %v", l.reqs)
	if len(l.reqs) == 0 || len(l.reqs) > 2 {
		t.Errorf("%d requests with the node's credentials; want a list and a watch at most: %v", len(l.reqs), l.reqs)
	}
	for _, u := range l.reqs {
		if u.Path != "/api/v1/nodes" || u.Query().Get("fieldSelector") != "metadata.name="+node {
			t.Errorf("request %s: want a list or watch of Node %s alone", u, node)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
