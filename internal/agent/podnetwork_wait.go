package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/winnode/winnode/internal/plan"
)

// subnetWait is one wait of pod-network for its Node's pod subnet: what
// it waits for now (last), logged each time that changes and named in the
// error when the wait ends without the subnet.
type subnetWait struct {
	a    *Agent
	node string
	mode string

	mu   sync.Mutex
	last string
}

// waitForSubnet waits, as the node, until its Node has its pod subnet in
// the network's mode (plan.NodeSubnet). First for the node's credentials,
// the kubeconfig the kubelet writes after its TLS bootstrap: a local file,
// looked for every `every`, with no request to the API server. Then it
// watches that one Node (a field selector on metadata.name: the node
// authorizer lets a node list and watch its own Node only so) and returns
// at the event that brings the subnet. While nothing changes it makes no
// request; a list or watch that fails is retried by client-go's reflector
// with its jittered backoff, capped at 30s. A fleet of nodes starting at
// once thus costs the API server one list and one watch each, not a read
// every half second. It runs until it has the subnet or ctx ends (the
// service's stop); then the error names the Node and what it lacked.
func (a *Agent) waitForSubnet(ctx context.Context, p *plan.PodNetwork, every time.Duration) (string, error) {
	w := &subnetWait{a: a, node: p.NodeName, mode: p.Network.Mode}
	nodes, err := w.client(ctx, every)
	if err != nil {
		return "", w.ended(ctx)
	}
	subnet, err := w.watch(ctx, nodes)
	if err != nil {
		if ctx.Err() != nil {
			return "", w.ended(ctx)
		}
		return "", plan.Errorf(plan.ErrNotJoined, "watching Node %s for its pod subnet: %v", w.node, err)
	}
	return subnet, nil
}

// client waits for the node's credentials and returns a client of them.
func (w *subnetWait) client(ctx context.Context, every time.Duration) (*rest.RESTClient, error) {
	var nodes *rest.RESTClient
	err := wait.PollUntilContextCancel(ctx, every, true, func(context.Context) (bool, error) {
		var state string
		if nodes, state = w.a.nodeClient(); nodes == nil {
			w.note(state)
		}
		return nodes != nil, nil
	})
	return nodes, err
}

// watch watches the Node until it has its subnet (watchtools.UntilWithSync:
// an informer on the one Node, which lists, then watches, and lists again
// after a lost watch).
func (w *subnetWait) watch(ctx context.Context, nodes *rest.RESTClient) (string, error) {
	lw := cache.NewListWatchFromClient(nodes, "nodes", metav1.NamespaceAll, fields.OneTermEqualSelector("metadata.name", w.node))
	list, watchNodes := lw.ListWithContextFunc, lw.WatchFuncWithContext
	lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		obj, err := list(ctx, o)
		w.requestFailed(err)
		return obj, err
	}
	lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		wi, err := watchNodes(ctx, o)
		w.requestFailed(err)
		return wi, err
	}
	var subnet string
	present := func(store cache.Store) (bool, error) {
		obj, ok, err := store.GetByKey(w.node)
		if err != nil || !ok {
			w.note(w.notRegistered())
			return false, err
		}
		return w.hasSubnet(obj, &subnet), nil
	}
	changed := func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			w.note(w.notRegistered())
			return false, nil
		}
		return w.hasSubnet(ev.Object, &subnet), nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, present, changed)
	return subnet, err
}

// hasSubnet reports whether obj, the Node, has its subnet, setting
// *subnet when it has.
func (w *subnetWait) hasSubnet(obj any, subnet *string) bool {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return false
	}
	if *subnet = plan.NodeSubnet(w.mode, node.Spec.PodCIDR, node.Annotations); *subnet != "" {
		return true
	}
	w.note("Node " + node.Name + " has no pod subnet yet (" + subnetSource(w.mode) + ")")
	return false
}

func (w *subnetWait) notRegistered() string {
	return "the kubelet has its certificate; Node " + w.node + " is not registered yet"
}

// requestFailed notes a list or watch of the Node that failed.
func (w *subnetWait) requestFailed(err error) {
	if err != nil {
		w.note("reading Node " + w.node + " with the node's credentials: " + err.Error())
	}
}

// note records what the wait is for, logging it when it changed. The
// informer's goroutines and the caller's both call it.
func (w *subnetWait) note(state string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if state != w.last {
		w.a.Log.Info("waiting", "for", state)
		w.last = state
	}
}

// ended is the error of a wait that ctx ended: stopped (the service's
// stop) or timed out (a deadline), naming the Node and what it lacked.
func (w *subnetWait) ended(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	how := "stopped"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		how = "timed out"
	}
	return plan.Errorf(plan.ErrNotJoined, "%s while waiting for Node %s's pod subnet: %s", how, w.node, w.last)
}
