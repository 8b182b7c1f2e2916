package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/csrapproval"
)

// Cluster is the operator's access to one workload cluster, as winnode's
// ServiceAccount there. Get returns a copy whose Facts are the Cluster's
// as it read them.
type Cluster struct {
	// Ref is the Cluster API Cluster.
	Ref winnodev1.ClusterRef
	// Config authenticates as the ServiceAccount (tokens renewed as they
	// run out: token.go); Kube is a client-go client of it.
	Config *rest.Config
	Kube   kubernetes.Interface
	// Cache holds what the operator's controllers watch there (Nodes,
	// CSRs: they add their sources through Clusters.OnConnect); Client
	// reads from it and writes with Config.
	Cache  cache.Cache
	Client client.Client
	// Namespace is winnode's namespace there: its ServiceAccount and the
	// join ServiceAccounts.
	Namespace string
	// Detector finds out, once, whether bootstrap tokens authenticate
	// there (the join credentials' form).
	Detector *bootstrap.Detector
	// Facts are the cluster's, from its Cluster API Cluster.
	Facts Facts
	// APIServer reads the names of that cluster's API server's serving
	// certificate, which no node of it may be named after or carry in a
	// serving certificate (the CSR approver, the node name check).
	APIServer *csrapproval.APIServerCertificate

	ctx  context.Context
	stop context.CancelFunc
}

// Context ends when the operator stops acting in the cluster (its Cluster
// or kubeconfig Secret gone, the operator stopping): what is started for
// the cluster (OnConnect) runs until then.
func (wc *Cluster) Context() context.Context { return wc.ctx }

// Clusters keeps one Cluster per workload cluster in use: connected at the
// first Get, checked again at most every RecheckEvery, stopped when its
// Cluster API Cluster is gone (part.go) or its kubeconfig Secret is.
type Clusters struct {
	// Clusters reads Cluster API Clusters (the manager's cache).
	Clusters client.Reader
	// Secrets reads the kubeconfig Secrets, by name, from the API server.
	Secrets client.Reader
	// Namespace is winnode's namespace in every workload cluster: the
	// operator's own namespace.
	Namespace string
	// Scheme is the scheme of each cluster's cache and client.
	Scheme *runtime.Scheme
	// TokenTTL is the lifetime of the ServiceAccount's tokens (default
	// DefaultTokenTTL); RecheckEvery how long a connected cluster is used
	// before Get checks its Secret and API server again (default 30s);
	// Timeout bounds each request of a connection or check (default 15s).
	TokenTTL, RecheckEvery, Timeout time.Duration
	Log                             logr.Logger

	mu        sync.Mutex
	entries   map[winnodev1.ClusterRef]*entry
	onConnect []func(*Cluster) error
	base      context.Context
	stopAll   context.CancelFunc
}

// entry is one workload cluster: connected (cluster set) or not.
type entry struct {
	mu      sync.Mutex
	cluster *Cluster
	checked time.Time
}

// OnConnect registers fn, called with each cluster once its cache exists,
// before Get returns it for the first time: the controllers add their
// watches there (source.Kind on Cluster.Cache). Register before the first
// Get.
func (c *Clusters) OnConnect(fn func(*Cluster) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onConnect = append(c.onConnect, fn)
}

// Get returns the workload cluster of Cluster ref, connecting to it when it
// is not yet (the admin kubeconfig read, winnode's access installed, a
// token issued, the cache started). An *Error says why it cannot be used;
// nothing is created in any cluster before every check passed.
func (c *Clusters) Get(ctx context.Context, ref winnodev1.ClusterRef) (*Cluster, error) {
	e := c.entry(ref)
	e.mu.Lock()
	defer e.mu.Unlock()
	facts, err := c.facts(ctx, ref)
	if err != nil {
		if we := (*Error)(nil); errors.As(err, &we) && we.Reason == ReasonClusterNotFound {
			c.disconnect(ref, e)
		}
		return nil, err
	}
	switch {
	case e.cluster == nil:
		if e.cluster, err = c.connect(ctx, ref); err != nil {
			return nil, err
		}
	case time.Since(e.checked) >= orDefault(c.RecheckEvery, 30*time.Second):
		if err := c.check(ctx, e.cluster); err != nil {
			var we *Error
			if errors.As(err, &we) && (we.Reason == ReasonKubeconfigSecretNotFound || we.Reason == ReasonKubeconfigInvalid || we.Reason == ReasonKubeconfigForbidden) {
				c.disconnect(ref, e)
			}
			return nil, err
		}
	default:
		out := *e.cluster
		out.Facts = facts
		return &out, nil
	}
	e.checked = time.Now()
	out := *e.cluster
	out.Facts = facts
	return &out, nil
}

// Forget stops the cache of Cluster ref's workload cluster, if connected:
// its Cluster is gone.
func (c *Clusters) Forget(ref winnodev1.ClusterRef) {
	e := c.entry(ref)
	e.mu.Lock()
	defer e.mu.Unlock()
	c.disconnect(ref, e)
}

// Start waits until ctx ends, then stops every cluster's cache (the
// manager runs it: the caches stop with the operator).
func (c *Clusters) Start(ctx context.Context) error {
	c.mu.Lock()
	c.init()
	stop := c.stopAll
	c.mu.Unlock()
	<-ctx.Done()
	stop()
	return nil
}

func (c *Clusters) init() {
	if c.entries == nil {
		c.entries = map[winnodev1.ClusterRef]*entry{}
		c.base, c.stopAll = context.WithCancel(context.Background())
	}
}

func (c *Clusters) entry(ref winnodev1.ClusterRef) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	e := c.entries[ref]
	if e == nil {
		e = &entry{}
		c.entries[ref] = e
	}
	return e
}

// disconnect stops e's cache; e.mu is held.
func (c *Clusters) disconnect(ref winnodev1.ClusterRef, e *entry) {
	if e.cluster == nil {
		return
	}
	e.cluster.stop()
	e.cluster = nil
	c.Log.Info("stopped watching the workload cluster", "cluster", ref.String())
}

// facts reads Cluster ref and its facts.
func (c *Clusters) facts(ctx context.Context, ref winnodev1.ClusterRef) (Facts, error) {
	var cl clusterv1.Cluster
	err := c.Clusters.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &cl)
	if apierrors.IsNotFound(err) {
		return Facts{}, fail(ref, ReasonClusterNotFound, "Cluster %s does not exist: a Machine joins the workload cluster of its own Cluster (spec.clusterName, in its namespace) and no other", ref)
	}
	if err != nil {
		return Facts{}, fmt.Errorf("reading Cluster %s: %w", ref, err)
	}
	f, err := FactsOf(&cl)
	if err != nil {
		return Facts{}, &Error{Cluster: ref, Reason: ReasonClusterNetworkInvalid, Err: err}
	}
	return f, nil
}

// connect reads the kubeconfig, installs winnode's access, gets a token,
// checks that the API server accepts it, and starts the cluster's cache.
func (c *Clusters) connect(ctx context.Context, ref winnodev1.ClusterRef) (*Cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*c.timeout())
	defer cancel()
	admin, err := c.adminConfig(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := install(ctx, admin, c.Namespace); err != nil {
		return nil, classify(ref, admin.Host, "installing winnode's namespace, ServiceAccount and RBAC", err)
	}
	ts := &tokenSource{clusters: c, ref: ref}
	if _, err := ts.issue(ctx); err != nil {
		return nil, err
	}
	wc, err := c.newCluster(ref, serviceAccountConfig(admin, ts))
	if err != nil {
		return nil, err
	}
	if err := c.probe(ctx, wc); err != nil {
		wc.stop()
		return nil, err
	}
	c.mu.Lock()
	hooks := append([]func(*Cluster) error(nil), c.onConnect...)
	c.mu.Unlock()
	for _, hook := range hooks {
		if err := hook(wc); err != nil {
			wc.stop()
			return nil, fmt.Errorf("watching the workload cluster of Cluster %s: %w", ref, err)
		}
	}
	c.Log.Info("acting in the workload cluster as its ServiceAccount "+c.Namespace+"/"+ServiceAccount, "cluster", ref.String(), "server", admin.Host)
	return wc, nil
}

// newCluster builds the clients and the cache of cfg and starts the cache.
func (c *Clusters) newCluster(ref winnodev1.ClusterRef, cfg *rest.Config) (*Cluster, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: c.Scheme})
	if err != nil {
		return nil, fmt.Errorf("a cache of the workload cluster of Cluster %s: %w", ref, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.Scheme, Cache: &client.CacheOptions{Reader: ca}})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	cctx, stop := context.WithCancel(c.base)
	c.mu.Unlock()
	go func() {
		if err := ca.Start(cctx); err != nil {
			c.Log.Error(err, "the cache of a workload cluster stopped", "cluster", ref.String())
		}
	}()
	return &Cluster{Ref: ref, Config: cfg, Kube: kube, Cache: ca, Client: cl, Namespace: c.Namespace,
		Detector: &bootstrap.Detector{Kube: kube}, APIServer: &csrapproval.APIServerCertificate{Config: cfg}, ctx: cctx, stop: stop}, nil
}

// check checks a connected cluster again: its kubeconfig Secret still
// there and usable, its API server answering the ServiceAccount.
func (c *Clusters) check(ctx context.Context, wc *Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	if _, err := c.adminConfig(ctx, wc.Ref); err != nil {
		return err // read to check it is there and usable, not kept
	}
	return c.probe(ctx, wc)
}

// probe asks the API server something as the ServiceAccount: its version
// (any authenticated user may).
func (c *Clusters) probe(ctx context.Context, wc *Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	err := wc.Kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	if err != nil {
		return classify(wc.Ref, wc.Config.Host, "asking the API server as ServiceAccount "+wc.Namespace+"/"+ServiceAccount, err)
	}
	return nil
}

// classify makes err of an action on server an Error: the API server
// answered (and refused), or did not answer. Errors of this package pass
// as they are.
func classify(ref winnodev1.ClusterRef, server, action string, err error) error {
	var we *Error
	if errors.As(err, &we) {
		return err
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fail(ref, ReasonAccessNotInstalled, "%s at %s was refused: %v (the kubeconfig's user must be the workload cluster's administrator)", action, server, err)
	}
	return fail(ref, ReasonUnreachable, "%s: the API server at %s did not answer: %v", action, server, err)
}
