// Package testenv starts a real Kubernetes control plane on this machine for
// tests and for the demo: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler, built from source by hack/tools (never downloaded), on
// free loopback ports, in a temporary folder.
//
// It is configured like a kubeadm cluster wherever winnode touches it:
// bootstrap-token authentication, Node and RBAC authorization, the
// NodeRestriction admission plugin, one cluster CA that signs kubelet
// certificates through kube-controller-manager, the bootstrap signer and token
// cleaner, the node lifecycle controller and the garbage collector, node
// subnets (each Node gets spec.podCIDR from ClusterCIDR, Services are in
// ServiceCIDR, kubeadm's defaults), a scheduler that binds pods to nodes, the
// kube-public/cluster-info ConfigMap that joining nodes read, and flannel's
// ConfigMap (flannel.go; no Linux node runs flanneld).
//
// controller-runtime's envtest starts only etcd and kube-apiserver, and keeps
// its client CA's key to itself, so kube-controller-manager could not sign
// kubelet certificates that the API server trusts; this package therefore
// runs the processes itself and uses envtest only to install CRDs.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options tune an environment. The zero value is what tests want.
type Options struct {
	// NoFlannel leaves out flannel's ConfigMap (flannel.go): the cluster
	// then runs no pod network winnode knows, as one whose own CNI
	// DaemonSets configure Windows nodes.
	NoFlannel bool
	// CRDDirectoryPaths are installed once the API server is up. Default:
	// the project's config/crd/bases, when it exists.
	CRDDirectoryPaths []string
	// NodeMonitorGracePeriod is how long a node may go without heartbeat
	// before the node lifecycle controller marks it NotReady (default 20s,
	// twice the kubelet's 10s lease renewal).
	NodeMonitorGracePeriod time.Duration
	// StartTimeout bounds the whole start-up (default 3 minutes).
	StartTimeout time.Duration
	// NoBootstrapTokenAuth starts kube-apiserver without
	// --enable-bootstrap-token-auth, as OpenShift's and several managed
	// offerings' API servers run: bootstrap tokens do not authenticate
	// there, and winnode joins hosts with ServiceAccount tokens instead.
	NoBootstrapTokenAuth bool
	// OpenShift is the openshift flavor (openshift.go): the API server
	// without bootstrap-token authentication, no kube-public/cluster-info
	// and no flannel (OVN-Kubernetes' place), OpenShift's CRDs and the
	// objects an OpenShift 4 cluster has (Env.OpenShift).
	OpenShift bool
	// MachineAPICloudURL, with OpenShift, runs the OpenShift Machine API's
	// real controllers (MachineSet, nodelink, Machine, drain) on namespace
	// openshift-machine-api, their winsim provider's instances in the
	// simulated cloud whose HTTP API is at this URL (machineapi.go).
	MachineAPICloudURL string
	// ClusterAPICloudURL is the capi flavor: Cluster API's CRDs and real
	// core controllers (Cluster, Machine, MachineSet, MachineDeployment)
	// with the simulated winsim infrastructure and control-plane
	// providers, their instances in the simulated cloud whose HTTP API is
	// at this URL (capi.go).
	ClusterAPICloudURL string
}

// Env is a running control plane.
type Env struct {
	// Config authenticates as a cluster administrator (system:masters).
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig file for kubectl and the demo.
	KubeconfigPath string
	// Dir holds the certificates, the etcd data and each component's log.
	Dir string
	// CACertFile and CAKeyFile are the cluster CA.
	CACertFile, CAKeyFile string
	// KubeletClientCertFile and KubeletClientKeyFile are the API server's
	// client certificate on kubelets (user kube-apiserver-kubelet-client):
	// tests reach a kubelet with them as the API server does.
	KubeletClientCertFile, KubeletClientKeyFile string
	// Host is the API server's URL (https://127.0.0.1:port).
	Host string

	// OpenShift is what the openshift flavor seeded (nil on others).
	OpenShift *OpenShift

	pki    *pki
	procs  []*process
	binDir string // where the control plane's programs are
	// stopControllers ends the simulated controllers that run in this
	// process (the openshift flavor's service CA).
	stopControllers context.CancelFunc
	// auditLog is the API server's audit log of writes (audit.go).
	auditLog string
}

// Start brings up etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler and waits
// until each is serving. On error, everything it started is stopped.
//
// The components' ports are found free (freePorts) and bound by the
// components a few seconds later; another process on the machine may bind
// one of them in between. A component that exits because its port is taken
// makes Start begin again on new ports, up to three times.
func Start(ctx context.Context, opts Options) (*Env, error) {
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, opts)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == 3 {
			return e, err
		}
	}
}

// errPortTaken marks a component that could not bind its port.
var errPortTaken = errors.New("a port found free was taken by another process before the component bound it")

// start is one attempt of Start: each component in turn, each waited for.
func start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.NodeMonitorGracePeriod == 0 {
		opts.NodeMonitorGracePeriod = 20 * time.Second
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.OpenShift {
		opts.NoBootstrapTokenAuth, opts.NoFlannel = true, true
	}
	if opts.MachineAPICloudURL != "" {
		// Found, or built, before the start-up's clock starts: a first
		// build of the Machine API's controllers takes minutes.
		if _, err := machineAPI.binary(); err != nil {
			return nil, err
		}
	}
	if opts.ClusterAPICloudURL != "" {
		// Likewise for Cluster API's controllers.
		if _, err := capiWorld.binary(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	reapStale()
	binDir, err := controlPlaneBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}
	e := &Env{Dir: dir, binDir: binDir}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, e.Logs(30))
			_ = e.Stop()
		}
	}()

	if e.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return nil, err
	}
	e.CACertFile, e.CAKeyFile = e.pki.path("ca.crt"), e.pki.path("ca.key")
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	etcdURL, err := e.startEtcd(ctx, ports[0], ports[1])
	if err != nil {
		return nil, err
	}
	client, err := e.startAPIServer(ctx, opts, etcdURL, ports[2])
	if err != nil {
		return nil, err
	}
	if err := e.startControllerManager(ctx, opts, client, ports[3]); err != nil {
		return nil, err
	}
	if err := e.startScheduler(ctx, ports[4]); err != nil {
		return nil, err
	}
	if !opts.OpenShift {
		if err := e.publishClusterInfo(ctx, client); err != nil {
			return nil, err
		}
	}
	if !opts.NoFlannel {
		if err := publishFlannelConfig(ctx, client); err != nil {
			return nil, err
		}
	}
	if err := e.installCRDs(opts); err != nil {
		return nil, err
	}
	if opts.OpenShift {
		if err := e.startOpenShift(ctx); err != nil {
			return nil, err
		}
	}
	if opts.MachineAPICloudURL != "" {
		if err := e.startMachineAPI(ctx, opts); err != nil {
			return nil, fmt.Errorf("starting the Machine API: %w", err)
		}
	}
	if opts.ClusterAPICloudURL != "" {
		if err := e.startClusterAPI(ctx, opts); err != nil {
			return nil, fmt.Errorf("starting Cluster API: %w", err)
		}
	}
	return e, nil
}

// installCRDs installs opts.CRDDirectoryPaths, by default the project's
// config/crd/bases when it exists.
func (e *Env) installCRDs(opts Options) error {
	crds := opts.CRDDirectoryPaths
	if crds == nil {
		if root, err := RepoRoot(); err == nil {
			if _, err := os.Stat(filepath.Join(root, "config/crd/bases")); err == nil {
				crds = []string{filepath.Join(root, "config/crd/bases")}
			}
		}
	}
	if opts.OpenShift {
		dir, err := openShiftCRDDir()
		if err != nil {
			return err
		}
		crds = append(crds, dir)
	}
	if opts.ClusterAPICloudURL != "" {
		dir, err := capiCRDDir()
		if err != nil {
			return err
		}
		crds = append(crds, dir)
	}
	if len(crds) == 0 {
		return nil
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing CRDs from %v: %w", crds, err)
	}
	return nil
}

// publishClusterInfo creates kube-public/cluster-info as kubeadm does: a
// kubeconfig with the API server's address and CA, readable anonymously, that
// the bootstrap signer signs for each bootstrap token.
func (e *Env) publishClusterInfo(ctx context.Context, client kubernetes.Interface) error {
	ca, err := os.ReadFile(e.CACertFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: e.Host, CertificateAuthorityData: ca}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: metav1.NamespacePublic},
		Data:       map[string]string{"kubeconfig": string(data)},
	}
	if _, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kube-public/cluster-info: %w", err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:bootstrap-signer-clusterinfo", Namespace: metav1.NamespacePublic},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cluster-info"}, Verbs: []string{"get"},
		}},
	}
	if _, err := client.RbacV1().Roles(metav1.NamespacePublic).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: metav1.NamespacePublic},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:anonymous"}},
	}
	if _, err := client.RbacV1().RoleBindings(metav1.NamespacePublic).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// UserConfig returns a client configuration that authenticates with a client
// certificate from the cluster CA, as user with groups.
func (e *Env) UserConfig(user string, groups ...string) (*rest.Config, error) {
	name := "user-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := e.pki.issue(name, user, groups, false, nil, nil); err != nil {
		return nil, err
	}
	return &rest.Config{
		Host: e.Host,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: e.CACertFile, CertFile: e.pki.path(name + ".crt"), KeyFile: e.pki.path(name + ".key"),
		},
	}, nil
}

// AnonymousConfig returns a client configuration that trusts the cluster CA
// and carries no credentials (callers add a bearer token).
func (e *Env) AnonymousConfig() *rest.Config {
	return &rest.Config{Host: e.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: e.CACertFile}}
}

// PIDs lists the processes the environment started.
func (e *Env) PIDs() []int {
	var pids []int
	for _, p := range e.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// Logs returns the last lines of each component's log.
func (e *Env) Logs(lines int) string {
	var b strings.Builder
	for _, p := range e.procs {
		fmt.Fprintf(&b, "----- %s (last %d lines of %s) -----\n%s\n", p.name, lines, p.logPath, p.tail(lines))
	}
	return b.String()
}

// Stop stops every process in reverse order of start and removes the folder
// (kept when WINNODE_KEEP_TESTENV is set, for a post-mortem).
func (e *Env) Stop() error {
	if e.stopControllers != nil {
		e.stopControllers()
	}
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].stop(10 * time.Second)
	}
	e.procs = nil
	if os.Getenv("WINNODE_KEEP_TESTENV") != "" {
		fmt.Fprintf(os.Stderr, "testenv: kept %s\n", e.Dir)
		return nil
	}
	return os.RemoveAll(e.Dir)
}

func writeKubeconfig(path, server, caFile, user, certFile, keyFile string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["winnode-testenv"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile}
	cfg.Contexts["winnode-testenv"] = &clientcmdapi.Context{Cluster: "winnode-testenv", AuthInfo: user}
	cfg.CurrentContext = "winnode-testenv"
	return clientcmd.WriteToFile(*cfg, path)
}

// freePorts asks the kernel for n free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func waitHTTP(ctx context.Context, p *process, c *http.Client, url string) error {
	return waitFor(ctx, p, url, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitFor polls cond until it holds, the context ends, or the process exits.
func waitFor(ctx context.Context, p *process, what string, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			err := fmt.Errorf("%s exited while waiting for %s: %v", p.name, what, p.waitErr)
			if strings.Contains(p.tail(20), "address already in use") {
				err = fmt.Errorf("%w (%w)", err, errPortTaken)
			}
			return false, err
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}
