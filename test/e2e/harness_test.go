// Package e2e is winnode's end-to-end suite: a real control plane
// (internal/testenv), simulated Windows hosts (internal/winsim) and the
// operator's controllers running in this process. Every host here is
// simulated.
package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1beta1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

func TestMain(m *testing.M) { testenv.Main(removingPayloads{m}) }

// removingPayloads runs the tests, then removes the worlds' payload
// folders and the simulated clouds' host folders (a few hundred MB each,
// which every run would otherwise leave in the temporary folder).
type removingPayloads struct{ *testing.M }

func (r removingPayloads) Run() int {
	code := r.M.Run()
	mapiCloud.removeHosts()
	capiCloud.removeHosts()
	shared.Lock()
	defer shared.Unlock()
	for _, w := range shared.worlds {
		if w != nil && w.payloadDir != "" {
			_ = os.RemoveAll(w.payloadDir)
		}
	}
	return code
}

// Namespace is the operator's namespace in these tests.
const Namespace = "winnode-system"

// operatorUser is the identity the operator authenticates as (a member of
// system:masters, as the administrator is): the API server's audit log
// tells its writes from the tests' own (testenv's Env.Writes).
const operatorUser = "winnode-operator"

// operatorVersion is the version the in-process operator reports.
const operatorVersion = "v0.0.0-e2e"

// apiServerKind is the kind of API server a world runs: the join
// credentials winnode uses (--join-credentials=auto) follow from it.
type apiServerKind string

const (
	// kindBootstrapToken: kube-apiserver with --enable-bootstrap-token-auth
	// (kubeadm's clusters); hosts join with bootstrap tokens.
	kindBootstrapToken apiServerKind = "bootstrap-token"
	// kindServiceAccount: kube-apiserver without it (OpenShift's, several
	// managed offerings'); hosts join with ServiceAccount tokens.
	kindServiceAccount apiServerKind = "service-account"
	// kindOpenShift: the openshift flavor of the test world (testenv
	// Options.OpenShift): an API server without bootstrap-token
	// authentication, OpenShift's CRDs and configuration objects, no
	// kube-public/cluster-info; hosts join with ServiceAccount tokens.
	kindOpenShift apiServerKind = "openshift"
	// kindCAPI: the bootstrap-token API server with the capi flavor of the
	// test world (testenv Options.ClusterAPICloudURL): Cluster API's real
	// core controllers and simulated providers beside it.
	kindCAPI apiServerKind = "capi"
)

// serviceAccountJoin says whether hosts of this world join with
// ServiceAccount tokens (its API server does not authenticate bootstrap
// tokens).
func (w *world) serviceAccountJoin() bool { return w.kind != kindBootstrapToken && w.kind != kindCAPI }

// eachAPIServer runs a scenario on both kinds of API server, as subtests
// named after the kind.
func eachAPIServer(t *testing.T, scenario func(t *testing.T, w *world)) {
	for _, kind := range []apiServerKind{kindBootstrapToken, kindServiceAccount} {
		t.Run(string(kind), func(t *testing.T) { scenario(t, getWorldOf(t, kind)) })
	}
}

// world is what every test of one kind of API server shares: one control
// plane, one payload, one key.
type world struct {
	kind       apiServerKind
	env        *testenv.Env
	kube       kubernetes.Interface
	client     client.Client
	opConfig   *rest.Config // the operator's identity (operatorUser)
	scheme     *runtime.Scheme
	standin    string
	agent      string
	service    string // the Linux build of cmd/winnode-service
	payloadDir string
	payload    *payload.Manifest
	signer     ssh.Signer
	keyPEM     []byte
}

var shared struct {
	sync.Mutex
	worlds map[apiServerKind]*world
	errs   map[apiServerKind]error
}

// getWorld starts (once) what every test needs, on an API server with
// bootstrap-token authentication.
func getWorld(t testing.TB) *world {
	t.Helper()
	return getWorldOf(t, kindBootstrapToken)
}

// getWorldOf is getWorld on the given kind of API server.
func getWorldOf(t testing.TB, kind apiServerKind) *world {
	t.Helper()
	opts := testenv.Options{NoBootstrapTokenAuth: kind == kindServiceAccount, OpenShift: kind == kindOpenShift}
	switch kind {
	case kindOpenShift:
		url, err := mapiCloud.serve()
		if err != nil {
			t.Fatalf("the Machine API's simulated cloud: %v", err)
		}
		opts.MachineAPICloudURL = url
	case kindCAPI:
		url, err := capiCloud.serve()
		if err != nil {
			t.Fatalf("Cluster API's simulated cloud: %v", err)
		}
		opts.ClusterAPICloudURL = url
	}
	env := testenv.GetWith(t, opts)
	shared.Lock()
	defer shared.Unlock()
	if shared.worlds == nil {
		shared.worlds, shared.errs = map[apiServerKind]*world{}, map[apiServerKind]error{}
	}
	if shared.worlds[kind] == nil && shared.errs[kind] == nil {
		shared.worlds[kind], shared.errs[kind] = newWorld(t, env, kind)
	}
	if err := shared.errs[kind]; err != nil {
		t.Fatalf("setting up the end-to-end world (%s API server): %v", kind, err)
	}
	return shared.worlds[kind]
}

func newWorld(t testing.TB, env *testenv.Env, kind apiServerKind) (*world, error) {
	w := &world{env: env, kind: kind}
	w.scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(w.scheme); err != nil {
		return nil, err
	}
	if err := winnodev1.AddToScheme(w.scheme); err != nil {
		return nil, err
	}
	if err := machinev1.Install(w.scheme); err != nil {
		return nil, err
	}
	if err := configv1.Install(w.scheme); err != nil {
		return nil, err
	}
	if err := clusterv1.AddToScheme(w.scheme); err != nil {
		return nil, err
	}
	if err := bootstrapv1.AddToScheme(w.scheme); err != nil {
		return nil, err
	}
	var err error
	if w.kube, err = kubernetes.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if w.client, err = client.New(env.Config, client.Options{Scheme: w.scheme}); err != nil {
		return nil, err
	}
	if w.opConfig, err = env.UserConfig(operatorUser, "system:masters"); err != nil {
		return nil, err
	}
	w.opConfig.QPS, w.opConfig.Burst = env.Config.QPS, env.Config.Burst
	if w.agent, err = testenv.BuildBinary("cmd/winnode-agent"); err != nil {
		return nil, err
	}
	if w.service, err = testenv.BuildBinary("cmd/winnode-service"); err != nil {
		return nil, err
	}
	if w.standin, err = testenv.BuildBinary("cmd/winsim-standin"); err != nil {
		return nil, err
	}
	hostLocal, err := testenv.HostLocal()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "winnode-e2e-payload-")
	if err != nil {
		return nil, err
	}
	w.payloadDir = dir
	if w.payload, err = simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t), AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, HostLocalBinary: hostLocal}); err != nil {
		return nil, err
	}
	key, err := fixture.GenerateKey()
	if err != nil {
		return nil, err
	}
	w.keyPEM, w.signer = key.PEM, key.Signer
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := w.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cloud-private-key", Namespace: Namespace},
		Data:       map[string][]byte{"private-key.pem": w.keyPEM},
	}
	if _, err := w.kube.CoreV1().Secrets(Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return w, nil
}

// newHost starts a simulated host that accepts the world's key. It is
// closed when the test ends.
func (w *world) newHost(t testing.TB) *winsim.Host {
	t.Helper()
	return w.newHostWith(t, true)
}

// newHostWith starts a simulated host that accepts the world's key only
// when authorize is set.
func (w *world) newHostWith(t testing.TB, authorize bool) *winsim.Host {
	t.Helper()
	return w.newHostNamed(t, authorize, "")
}

// newHostNamed starts a simulated host named hostname ("": a random name),
// e.g. a clone of another host.
func (w *world) newHostNamed(t testing.TB, authorize bool, hostname string) *winsim.Host {
	t.Helper()
	return w.newHostOf(t, authorize, hostname, "")
}

// newHostOf starts a simulated host of a Windows Server release ("2019",
// the default, or "2022").
func (w *world) newHostOf(t testing.TB, authorize bool, hostname, build string) *winsim.Host {
	t.Helper()
	return w.newHostTuned(t, authorize, func(o *winsim.Options) { o.Hostname, o.Build = hostname, build })
}

// newHostTuned starts a simulated host with the options tune sets (a
// foreign containerd, no Containers feature): a stock Windows Server
// otherwise, with no container runtime.
func (w *world) newHostTuned(t testing.TB, authorize bool, tune func(*winsim.Options)) *winsim.Host {
	t.Helper()
	opts := winsim.Options{
		StateDir:      t.TempDir(),
		StandinBinary: w.standin,
		BootDelay:     500 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(newTestWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if tune != nil {
		tune(&opts)
	}
	h, err := winsim.New(opts)
	if err != nil {
		t.Fatalf("simulated host: %v", err)
	}
	if authorize {
		if err := h.AuthorizeKey(w.signer.PublicKey()); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Start(); err != nil {
		t.Fatalf("starting simulated host: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	t.Cleanup(func() {
		if t.Failed() {
			logServiceLogs(t, h)
		}
	})
	t.Cleanup(func() { checkNoUnsafeExecs(t, h) })
	return h
}

// checkNoUnsafeExecs fails the test if winnode ran a program as the host's
// administrator from where a local user who is not one could have written
// (issue 11: C:\k before the agent secured it, say).
func checkNoUnsafeExecs(t testing.TB, h *winsim.Host) {
	t.Helper()
	for _, e := range h.UnsafeExecs() {
		t.Errorf("host %s: ran %s as Administrator although %s", h.Hostname(), e.Program, e.Why)
	}
}

// logServiceLogs shows the end of each service's log on a host (what the
// simulated service control manager kept of its output, and the logs the
// services write themselves), for a failed test.
func logServiceLogs(t testing.TB, h *winsim.Host) {
	for _, dir := range []string{`C:\ProgramData\winsim\logs`, `C:\var\log\kubelet`, `C:\var\log\kube-proxy`, `C:\var\log\flanneld`, `C:\var\log\hybrid-overlay`} {
		local, err := h.Path(dir)
		if err != nil {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(local, "*.log"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) > 15 {
				lines = lines[len(lines)-15:]
			}
			t.Logf("%s %s\\%s (last lines):\n%s", h.Hostname(), dir, filepath.Base(f), strings.Join(lines, "\n"))
		}
	}
}

// testWriter sends log lines to t.Log until the test's cleanups reach it:
// a goroutine that outlives the operator (client-go's event broadcaster
// retrying a write) must not log into a finished test, which panics.
type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

// newTestWriter is a testWriter that stops at t's cleanup; create it before
// what logs into it, so that its cleanup runs after theirs.
func newTestWriter(t testing.TB) *testWriter {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return w
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// operator is the operator's controllers running in this process.
type operator struct {
	mgr      ctrl.Manager
	cancel   context.CancelFunc
	done     chan error
	uploaded atomic.Int64
	checked  atomic.Int64 // no-op checks of Ready instances
	waited   atomic.Int64 // looks of waiting upgrades that found no turn
}

// operatorOptions tune one operator run.
type operatorOptions struct {
	// afterStep is the Configurer's AfterStep hook (op lets it stop the
	// operator).
	afterStep func(op *operator, inst *winnodev1.WindowsInstance, step string)
	// crash is the Configurer's Crash hook.
	crash func(op *operator, inst *winnodev1.WindowsInstance, step string) error
	// version replaces the operator's version (an upgrade).
	version string
	// payloadDir and payload replace the world's payload (an upgrade).
	payloadDir string
	payload    *payload.Manifest
	// maxUnavailable is --max-unavailable (0: the default, 1).
	maxUnavailable int
	// network is --network ("": auto), hybridClusterCIDR
	// --hybrid-cluster-cidr.
	network           string
	hybridClusterCIDR string
	// logs are --log-file-size and --log-file-age (nil: the defaults).
	logs *logrotate.Limits
	// minTransferRate and slowTransferGrace are --min-transfer-rate and
	// --slow-transfer-grace (0: the defaults).
	minTransferRate   int
	slowTransferGrace time.Duration
	// maxConcurrent is --max-concurrent-configurations (0: 10, the tests'
	// cap; -1: none, the machine's bound, as the operator's default).
	maxConcurrent int
	// resolve resolves host names for the address conflict check (nil:
	// the system's resolver).
	resolve inventory.Resolver
	// proxy is the cluster-wide proxy (the operator's HTTP_PROXY,
	// HTTPS_PROXY and NO_PROXY on Kubernetes).
	proxy plan.ProxyFacts
	// trustedCA is --trusted-ca-configmap.
	trustedCA string
	// pullJoinTimeout is how long a Pull Machine may go without a nodeRef
	// before NodeJoinTimedOut (0: capibootstrap's 30 minutes).
	pullJoinTimeout time.Duration
	// skipPreflight is --skip-preflight: checks skipped for every instance.
	skipPreflight []string
}

// startOperator runs the operator until the test ends or op.stop.
func (w *world) startOperator(t testing.TB, o operatorOptions) *operator {
	t.Helper()
	op := &operator{done: make(chan error, 1)}
	payloadDir, manifest := w.payloadDir, w.payload
	if o.payloadDir != "" {
		payloadDir, manifest = o.payloadDir, o.payload
	}
	mgr, err := controller.NewManager(w.opConfig, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:                 logr.FromSlogHandler(slog.NewTextHandler(newTestWriter(t), &slog.HandlerOptions{Level: slog.LevelInfo})),
	}, controller.Options{
		Namespace:          Namespace,
		PayloadDir:         payloadDir,
		Payload:            manifest,
		MaxConcurrent:      cmp.Or(o.maxConcurrent, 10),
		MaxUnavailable:     o.maxUnavailable,
		Version:            cmp.Or(o.version, operatorVersion),
		RetryMax:           5 * time.Second,
		Network:            o.network,
		HybridClusterCIDR:  o.hybridClusterCIDR,
		Logs:               o.logs,
		MinTransferRate:    o.minTransferRate,
		SlowTransferGrace:  o.slowTransferGrace,
		Resolve:            o.resolve,
		Proxy:              o.proxy,
		TrustedCAConfigMap: o.trustedCA,
		PullJoinTimeout:    o.pullJoinTimeout,
		SkipPreflight:      o.skipPreflight,
		// The simulated hosts' network (loopback, or $WINSIM_NETWORK under
		// hack/test-e2e.sh) and loopback, where some tests place
		// instances no host answers.
		Addresses: inventory.AddressPolicy{Allowed: allowedAddresses()},
		TuneInstance: func(c *configure.Configurer) {
			c.PollInterval = 500 * time.Millisecond
			c.UpgradeRecheck = 500 * time.Millisecond
			c.DialTimeout = 5 * time.Second
			c.DrainTimeout = time.Minute
			uploaded := c.Uploaded
			c.Uploaded = func(n int64) {
				if uploaded != nil {
					uploaded(n)
				}
				op.uploaded.Add(n)
			}
			c.AfterStep = func(inst *winnodev1.WindowsInstance, step string) {
				switch step {
				case configure.StepChecked:
					op.checked.Add(1)
				case configure.StepWaited:
					op.waited.Add(1)
				}
				if o.afterStep != nil {
					o.afterStep(op, inst, step)
				}
			}
			if o.crash != nil {
				c.Crash = func(inst *winnodev1.WindowsInstance, step string) error { return o.crash(op, inst, step) }
			}
		},
	})
	if err != nil {
		t.Fatalf("operator manager: %v", err)
	}
	op.mgr = mgr
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(op.stop)
	return op
}

// waitStarted waits until the operator's caches are filled, as they are
// in an operator that was already running. The controllers create their
// informers only once the manager runs them, so the cache alone may look
// synced before they exist: the informers of what the instance controller
// watches are asked for here (the same ones, shared) and waited for.
func (op *operator) waitStarted(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, obj := range []client.Object{&winnodev1.WindowsInstance{}, &corev1.Node{}, &corev1.Secret{}} {
		inf, err := op.mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			t.Fatalf("the operator's informer of %T: %v", obj, err)
		}
		if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("the operator's informer of %T did not fill within a minute", obj)
		}
	}
	if !op.mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the operator's caches did not fill within a minute")
	}
}

// stop stops the operator and waits until it has (idempotent).
func (op *operator) stop() {
	op.cancel()
	if err, ok := <-op.done; ok {
		close(op.done)
		_ = err
	}
}

// instanceFor creates a WindowsInstance for a simulated host.
func (w *world) instanceFor(t testing.TB, name string, h *winsim.Host) *winnodev1.WindowsInstance {
	t.Helper()
	inst := builder.Instance(name).Host(h.IP(), h.User()).Port(int32(h.Port())).Manual().Build()
	if err := w.client.Create(context.Background(), inst); err != nil {
		t.Fatalf("creating WindowsInstance %s: %v", name, err)
	}
	t.Cleanup(func() { w.forget(name) })
	return inst
}

// forget deletes an instance a test leaves behind, without the operator:
// the finalizer is dropped and its Node and tokens deleted.
//
// It runs while the test's operator may still run (cleanups run in reverse
// order, and the operator was started first), so the instance is deleted
// before its finalizer is dropped: no finalizer can be added to an object
// being deleted, so the operator cannot put its own back. The finalizer
// goes with a merge patch, which needs no resourceVersion (an update would
// conflict with the operator's status writes and leave the instance
// behind, still being deleted, for the next test's operator). forget waits
// until the instance is gone.
func (w *world) forget(name string) {
	ctx := context.Background()
	inst := &winnodev1.WindowsInstance{}
	if err := w.client.Get(ctx, client.ObjectKey{Name: name}, inst); err != nil {
		return
	}
	if inst.Status.NodeName != "" {
		_ = w.kube.CoreV1().Nodes().Delete(ctx, inst.Status.NodeName, metav1.DeleteOptions{})
	}
	// Revoked as the operator revokes them (RevokeInstanceToken), each by
	// its ID: the one its status records, and any a crash between issuing
	// and recording left.
	if toks, err := w.tokenSecrets(ctx, name); err == nil {
		for _, s := range toks {
			_ = bootstrap.RevokeInstanceToken(ctx, w.kube, name, string(s.Data[bootstrapapi.BootstrapTokenIDKey]))
		}
	}
	_ = bootstrap.RevokeServiceAccount(ctx, w.kube, Namespace, name)
	_ = w.client.Delete(ctx, inst)
	_ = w.client.Patch(ctx, inst, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	// Best effort, as the rest of the clean-up: a test that needs the
	// instance gone waits for it itself.
	_ = wait.PollUntilContextTimeout(ctx, testkit.Interval, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := w.client.Get(ctx, client.ObjectKey{Name: name}, &winnodev1.WindowsInstance{})
		return apierrors.IsNotFound(err), nil
	})
}

func (w *world) get(t testing.TB, name string) *winnodev1.WindowsInstance {
	t.Helper()
	inst := &winnodev1.WindowsInstance{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Name: name}, inst); err != nil {
		t.Fatalf("reading WindowsInstance %s: %v", name, err)
	}
	return inst
}

// waitReady waits until the instance is Ready with a Ready Node.
func (w *world) waitReady(t testing.TB, name string, timeout time.Duration) *winnodev1.WindowsInstance {
	t.Helper()
	var inst *winnodev1.WindowsInstance
	testkit.Eventually(t, timeout, "WindowsInstance "+name+" to be Ready", func() (bool, string) {
		inst = &winnodev1.WindowsInstance{}
		if err := w.client.Get(context.Background(), client.ObjectKey{Name: name}, inst); err != nil {
			return false, err.Error()
		}
		s := inst.Status
		state := fmt.Sprintf("phase=%s step=%s node=%s lastError=%q conditions=%v", s.Phase, s.Step, s.NodeName, s.LastError, conditionSummary(s.Conditions))
		return s.Phase == winnodev1.PhaseReady, state
	})
	return inst
}

func conditionSummary(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	return strings.Join(parts, ",")
}

// instanceTokens lists the bootstrap token Secrets of an instance.
func (w *world) instanceTokens(t testing.TB, name string) []corev1.Secret {
	t.Helper()
	toks, err := w.tokenSecrets(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

// tokenSecrets lists the bootstrap token Secrets labelled as an instance's.
func (w *world) tokenSecrets(ctx context.Context, name string) ([]corev1.Secret, error) {
	sel := labels.SelectorFromSet(labels.Set{winnodev1.LabelInstance: name}).String()
	list, err := w.kube.CoreV1().Secrets(bootstrap.TokenNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// checkJoinCredentialsGone checks that an instance that joined (or was
// removed) holds no join credential any more, of either form: no bootstrap
// token Secret, no join ServiceAccount or binding, nothing in its status.
// On an API server without bootstrap-token authentication it also checks
// that the instance was only ever given ServiceAccount tokens (its
// JoinCredentials events).
func (w *world) checkJoinCredentialsGone(t testing.TB, name string, status winnodev1.WindowsInstanceStatus) {
	t.Helper()
	ctx := context.Background()
	if status.BootstrapTokenID != "" || status.JoinServiceAccount != "" {
		t.Errorf("instance %s still records join credentials: bootstrap token %q, ServiceAccount %q", name, status.BootstrapTokenID, status.JoinServiceAccount)
	}
	if toks := w.instanceTokens(t, name); len(toks) != 0 {
		t.Errorf("instance %s still has %d bootstrap token Secrets", name, len(toks))
	}
	sa := bootstrap.ServiceAccountName(name)
	if _, err := w.kube.CoreV1().ServiceAccounts(Namespace).Get(ctx, sa, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("join ServiceAccount %s/%s of instance %s still exists (%v): its tokens are not revoked", Namespace, sa, name, err)
	}
	crbs, err := w.kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{winnodev1.LabelInstance: name}).String()})
	if err != nil || len(crbs.Items) != 0 {
		t.Errorf("instance %s still has join ClusterRoleBindings: %d (%v)", name, len(crbs.Items), err)
	}
	if crb, err := w.kube.RbacV1().ClusterRoleBindings().Get(ctx, bootstrap.JoinServiceAccountsBinding, metav1.GetOptions{}); err == nil {
		for _, s := range crb.Subjects {
			if s.Namespace == Namespace && s.Name == sa {
				t.Errorf("join ServiceAccount %s of instance %s is still a subject of %s", sa, name, bootstrap.JoinServiceAccountsBinding)
			}
		}
	} else if w.serviceAccountJoin() && status.NodeName != "" {
		t.Errorf("reading %s after a ServiceAccount join: %v", bootstrap.JoinServiceAccountsBinding, err)
	}
	if !w.serviceAccountJoin() || status.NodeName == "" {
		return
	}
	w.waitEvents(t, metav1.NamespaceDefault, name, "JoinCredentials")
	issued := w.eventMessages(t, metav1.NamespaceDefault, name, "JoinCredentials")
	for _, m := range issued {
		if !strings.HasPrefix(m, "issued a token of ServiceAccount ") {
			t.Errorf("instance %s was given a bootstrap token on an API server without bootstrap-token authentication: %s", name, m)
		}
	}
}

// nodesOfHost counts the Nodes whose hostname label is the host's.
func (w *world) nodesOfHost(t testing.TB, h *winsim.Host) int {
	t.Helper()
	list, err := w.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, node := range list.Items {
		if strings.EqualFold(node.Name, h.Hostname()) {
			n++
		}
	}
	return n
}

// winnodeServices are the services winnode installs: the kubelet and
// kube-proxy, and flanneld, csi-proxy and windows_exporter where the plan
// has them.
var winnodeServices = []string{"kubelet", "kube-proxy", "flanneld", "csi-proxy", "windows_exporter"}

// servicePIDs is each winnode service's process ID on a host: the
// kubelet's, and those of kube-proxy, flanneld, csi-proxy and
// windows_exporter where the plan has them.
func servicePIDs(t testing.TB, h *winsim.Host) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range winnodeServices {
		svc, err := h.Services().Get(name)
		if err != nil && name != "kubelet" {
			continue
		}
		if err != nil {
			t.Fatalf("service %s on %s: %v", name, h.Hostname(), err)
		}
		out[name] = svc.Status.PID
	}
	return out
}

// hostFileExists says whether a Windows path exists on a simulated host.
func hostFileExists(t testing.TB, h *winsim.Host, path string) bool {
	t.Helper()
	p, err := h.Path(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// allowedAddresses is the operator's --allow-addresses in these tests:
// loopback and the simulated hosts' network (winsim.Network).
func allowedAddresses() []netip.Prefix {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	network, err := winsim.Network()
	if err != nil {
		panic(err) // also refused by winsim when a host starts
	}
	if network == loopback {
		return []netip.Prefix{loopback}
	}
	return []netip.Prefix{loopback, network}
}
