package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
)

// The capi flavor's Cluster API (Options.ClusterAPICloudURL): the real core
// controllers of sigs.k8s.io/cluster-api, at the version
// hack/tools/capi/go.mod pins — Cluster (with its ClusterCache), Machine,
// MachineSet and MachineDeployment — built into one program,
// winsim-capi-world (hack/tools/capi/capiworld, built by
// hack/tools/build-capi-world.sh), with two simulated providers: the winsim
// infrastructure provider (WinsimCluster, WinsimMachine,
// WinsimMachineTemplate), whose machines are instances of the simulated
// cloud whose HTTP API the test serves at ClusterAPICloudURL, and
// WinsimControlPlane, a stand-in control-plane provider that reports the
// test world's running control plane (Cluster API sets no Machine's nodeRef
// before a control plane says it is initialized). The management cluster is
// the workload cluster: the hosts join the API server the controllers run
// against. The program runs as cluster administrator: no RBAC to create.

// EnvCAPIWorldBin names the environment variable with the path of the
// winsim-capi-world program (hack/test.sh sets it); without it
// hack/tools/build-capi-world.sh builds it (once, then from its cache).
const EnvCAPIWorldBin = "WINNODE_CAPI_WORLD_BIN"

// EnvCAPICRDs names the environment variable with the folder of Cluster
// API's core CRDs and the winsim providers' CRDs; without it, the crds
// folder beside the program (where hack/tools/build-capi-world.sh puts
// them).
const EnvCAPICRDs = "WINNODE_CAPI_CRDS"

// CAPINamespace is the namespace of the capi flavor's Clusters and their
// Machines, MachineDeployments, templates and bootstrap data.
const CAPINamespace = "capi-windows"

// The winsim providers' API groups and kinds
// (hack/tools/capi/config/crd), all of version WinsimProviderVersion.
const (
	WinsimInfrastructureGroup = "infrastructure.winsim.winnode.io"
	WinsimControlPlaneGroup   = "controlplane.winsim.winnode.io"
	WinsimProviderVersion     = "v1alpha1"

	WinsimClusterKind         = "WinsimCluster"
	WinsimMachineKind         = "WinsimMachine"
	WinsimMachineTemplateKind = "WinsimMachineTemplate"
	WinsimControlPlaneKind    = "WinsimControlPlane"
)

// capiWorld is the winsim-capi-world program.
var capiWorld = &toolProgram{env: EnvCAPIWorldBin, script: "hack/tools/build-capi-world.sh", what: "Cluster API's controllers"}

// capiCRDDir is the folder of Cluster API's and the winsim providers' CRDs.
func capiCRDDir() (string, error) {
	if dir := os.Getenv(EnvCAPICRDs); dir != "" {
		return dir, nil
	}
	bin, err := capiWorld.binary()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(bin), "crds")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no Cluster API CRDs beside %s (%w): run hack/tools/build-capi-world.sh, or set %s", bin, err, EnvCAPICRDs)
	}
	return dir, nil
}

// capiControllers are the controllers the program runs, by the names
// controller-runtime logs them under when their workers start.
var capiControllers = []string{
	"clustercache", "cluster", "machine", "machineset", "machinedeployment",
	"winsimcluster", "winsimcontrolplane", "winsimmachine",
}

// startClusterAPI starts Cluster API's controllers and the winsim
// providers with the admin kubeconfig, and waits until each controller's
// workers run (its caches synced).
func (e *Env) startClusterAPI(ctx context.Context, opts Options) error {
	return e.startToolProgram(ctx, capiWorld, "capi-world", capiControllers,
		"--kubeconfig="+e.KubeconfigPath,
		"--cloud-url="+opts.ClusterAPICloudURL)
}

// CAPIScheme knows the built-in types, Cluster API's v1beta2 types and
// winnode's bootstrap types; the winsim providers' objects are unstructured.
func CAPIScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// winsimObject is an object of a winsim provider's kind, with spec.
func winsimObject(group, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(group + "/" + WinsimProviderVersion)
	u.SetKind(kind)
	u.SetNamespace(CAPINamespace)
	u.SetName(name)
	return u
}

// CAPIClusterObjects are the objects of a Cluster named name in
// CAPINamespace, in the order to create them: its WinsimCluster and its
// WinsimControlPlane, both named name, and the Cluster that refers to them,
// with the test world's pod and service ranges. The Cluster controller
// looks for the objects its Cluster refers to when it first sees it, then
// only every 30 seconds: created after the Cluster, they would wait.
func CAPIClusterObjects(name string) []client.Object {
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: CAPINamespace},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{ClusterCIDR}},
				Services: clusterv1.NetworkRanges{CIDRBlocks: []string{ServiceCIDR}},
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: WinsimInfrastructureGroup, Kind: WinsimClusterKind, Name: name},
			ControlPlaneRef:   clusterv1.ContractVersionedObjectReference{APIGroup: WinsimControlPlaneGroup, Kind: WinsimControlPlaneKind, Name: name},
		},
	}
	return []client.Object{
		winsimObject(WinsimInfrastructureGroup, WinsimClusterKind, name, map[string]any{}),
		winsimObject(WinsimControlPlaneGroup, WinsimControlPlaneKind, name, map[string]any{}),
		cluster,
	}
}

// CreateCAPICluster creates namespace CAPINamespace and the objects of
// CAPIClusterObjects(name), and waits until Cluster API reports the
// Cluster's infrastructure provisioned, its control plane initialized and
// the workload cluster reachable (RemoteConnectionProbe): from then on a
// Machine whose Node appears gets its nodeRef. The winsim providers set
// the control plane endpoint and write the <name>-kubeconfig Secret.
func (e *Env) CreateCAPICluster(ctx context.Context, name string) (*clusterv1.Cluster, error) {
	return e.CreateCAPIClusterOf(ctx, CAPIClusterObjects(name))
}

// InNamespace moves objs, made for CAPINamespace, to namespace ns (they
// refer to each other by name, within one namespace) and returns them.
func InNamespace(ns string, objs ...client.Object) []client.Object {
	for _, o := range objs {
		o.SetNamespace(ns)
	}
	return objs
}

// CreateCAPIWorkloadCluster is CreateCAPICluster for a Cluster whose
// workload cluster is workload, a second control plane of the test world
// (Start), as in Cluster API's usual topology: a management cluster (e,
// where Cluster API and winnode run) and workload clusters elsewhere
// (CAPIWorkloadClusterObjects).
func (e *Env) CreateCAPIWorkloadCluster(ctx context.Context, name string, workload *Env) (*clusterv1.Cluster, error) {
	admin, objs, err := CAPIWorkloadClusterObjects(name, workload)
	if err != nil {
		return nil, err
	}
	return e.CreateCAPIClusterOf(ctx, append([]client.Object{admin}, objs...))
}

// CAPIWorkloadClusterObjects are CAPIClusterObjects(name) for a Cluster
// whose workload cluster is workload: its WinsimCluster's control plane
// endpoint is workload's API server; its WinsimControlPlane stands for
// workload's control plane and copies the kubeconfig of Secret admin
// (workload's admin kubeconfig, named <name>-workload-admin, to create
// first) into the Cluster's <name>-kubeconfig Secret, through which
// Cluster API and winnode reach that cluster. Until admin exists, the
// Cluster has no kubeconfig Secret.
func CAPIWorkloadClusterObjects(name string, workload *Env) (admin *corev1.Secret, objs []client.Object, err error) {
	kubeconfig, err := workload.AdminKubeconfig()
	if err != nil {
		return nil, nil, err
	}
	endpoint, err := url.Parse(workload.Config.Host)
	if err != nil {
		return nil, nil, err
	}
	port, err := strconv.Atoi(endpoint.Port())
	if err != nil {
		return nil, nil, fmt.Errorf("the workload control plane's URL %s: port: %w", workload.Config.Host, err)
	}
	admin = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: CAPINamespace, Name: name + "-workload-admin"},
		Data: map[string][]byte{"value": kubeconfig}}
	objs = CAPIClusterObjects(name)
	objs[0].(*unstructured.Unstructured).Object["spec"] = map[string]any{
		"controlPlaneEndpoint": map[string]any{"host": endpoint.Hostname(), "port": int64(port)}}
	objs[1].(*unstructured.Unstructured).Object["spec"] = map[string]any{"workloadKubeconfigSecret": admin.Name}
	return admin, objs, nil
}

// CreateCAPIClusterOf creates the namespace of objs, whose last is the
// Cluster, and objs (CAPIClusterObjects, CAPIWorkloadClusterObjects), and
// waits until Cluster API reports the Cluster provisioned and reachable.
func (e *Env) CreateCAPIClusterOf(ctx context.Context, objs []client.Object) (*clusterv1.Cluster, error) {
	s, err := CAPIScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(e.Config, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	cluster := objs[len(objs)-1].(*clusterv1.Cluster)
	if err := createOrGet(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster.Namespace}}); err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return false, err
		}
		last = clusterProgress(cluster)
		return ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) &&
			ptr.Deref(cluster.Status.Initialization.ControlPlaneInitialized, false) &&
			conditionTrue(cluster.Status.Conditions, clusterv1.ClusterRemoteConnectionProbeCondition), nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for Cluster %s/%s to be provisioned and reachable: %w; last seen: %s", cluster.Namespace, cluster.Name, err, last)
	}
	return cluster, nil
}

// clusterProgress says where Cluster API is with the Cluster, for an error.
func clusterProgress(cl *clusterv1.Cluster) string {
	var conds []string
	for _, c := range cl.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	return fmt.Sprintf("phase %q, infrastructureProvisioned %v, controlPlaneInitialized %v, conditions %s", cl.Status.Phase,
		ptr.Deref(cl.Status.Initialization.InfrastructureProvisioned, false),
		ptr.Deref(cl.Status.Initialization.ControlPlaneInitialized, false), strings.Join(conds, " "))
}

func conditionTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// WinnodeConfigTemplateBootstrap is the bootstrap of Machines whose
// bootstrap data winnode's bootstrap provider writes: Cluster API clones
// WinnodeConfigTemplate name (in the MachineDeployment's namespace) into
// one WinnodeConfig per Machine.
func WinnodeConfigTemplateBootstrap(name string) clusterv1.Bootstrap {
	return clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
		APIGroup: bootstrapv1.GroupVersion.Group, Kind: "WinnodeConfigTemplate", Name: name}}
}

// WinsimMachineDeployment is a MachineDeployment named name of replicas
// Machines of Cluster cluster in CAPINamespace, booted with bootstrap
// (WinnodeConfigTemplateBootstrap, or a dataSecretName), and the
// WinsimMachineTemplate of the same name its Machines' infrastructure is
// made from; callers create the template first. The MachineDeployment
// carries what Cluster API's defaulting webhook would add, which the test
// world does not run: the cluster-name label, the selector on it and on the
// deployment-name label, its template's labels, the rolling update's
// limits (one Machine more, none unavailable).
func WinsimMachineDeployment(cluster, name string, replicas int32, bootstrap clusterv1.Bootstrap) (*clusterv1.MachineDeployment, *unstructured.Unstructured) {
	template := winsimObject(WinsimInfrastructureGroup, WinsimMachineTemplateKind, name,
		map[string]any{"template": map[string]any{"spec": map[string]any{}}})
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster, clusterv1.MachineDeploymentNameLabel: name}
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: CAPINamespace, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: cluster,
			Replicas:    &replicas,
			Selector:    metav1.LabelSelector{MatchLabels: labels},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: cluster,
					Bootstrap:   bootstrap,
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: WinsimInfrastructureGroup, Kind: WinsimMachineTemplateKind, Name: name},
				},
			},
		},
	}
	return md, template
}

// AdminKubeconfig is the environment's admin kubeconfig with its
// certificates inlined, as a Cluster API control-plane provider writes it
// into a Cluster's <cluster>-kubeconfig Secret (key "value").
func (e *Env) AdminKubeconfig() ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(e.KubeconfigPath)
	if err != nil {
		return nil, err
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, err
	}
	return clientcmd.Write(*cfg)
}

// KubeconfigSecret is the <cluster>-kubeconfig Secret, in namespace, of a
// Cluster whose workload cluster is e, in Cluster API's format (type
// cluster.x-k8s.io/secret, the cluster-name label, key "value").
func (e *Env) KubeconfigSecret(namespace, cluster string) (*corev1.Secret, error) {
	data, err := e.AdminKubeconfig()
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: cluster + "-kubeconfig", Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": data},
	}, nil
}

// ClusterAPICRDs returns Cluster API's own Machine and Cluster CRDs, from
// the source of sigs.k8s.io/cluster-api at the release whose API types
// (sigs.k8s.io/cluster-api/api) the main module requires, fetched through
// the Go module proxy into the module cache: for tests that need the
// Cluster API types served without Cluster API's controllers (the capi
// flavor installs every CRD of Cluster API itself). The full module is not
// a dependency: only its CRD files are read.
func ClusterAPICRDs(t TB) []string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "-C", root, "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/cluster-api/api").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/cluster-api/api: %v", err)
	}
	version := strings.TrimSpace(string(out))
	dir, err := os.MkdirTemp("", "winnode-capi-crds-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/cluster-api@"+version)
	cmd.Dir = dir // outside any module: nothing is added to go.mod or go.sum
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("go mod download sigs.k8s.io/cluster-api@%s: %v\n%s%s", version, err, out, stderr.String())
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download sigs.k8s.io/cluster-api@%s: no folder in %s (%v)", version, out, err)
	}
	bases := filepath.Join(mod.Dir, "core/config/crd/bases")
	return []string{filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"), filepath.Join(bases, "cluster.x-k8s.io_machines.yaml")}
}
