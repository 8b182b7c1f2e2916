package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The openshift flavor (Options.OpenShift) is a control plane configured as
// an OpenShift 4 cluster is where winnode touches it: no bootstrap-token
// authentication, no kube-public/cluster-info and no flannel, the CRDs of
// github.com/openshift/api at the version github.com/openshift/machine-api-operator
// pins (hack/tools/openshift-crds.sh), and the objects the installer and the
// Machine Config Operator create (seedOpenShift): ClusterVersion version,
// Infrastructure cluster (platform None, its api-int address), Network
// cluster, ControllerConfig machine-config-controller (the kubelet CA), the
// node-bootstrapper ServiceAccount and its token, and a rendered worker
// MachineConfig (openshift_worker.go).

// EnvOpenShiftCRDs names the environment variable that points at a folder
// of OpenShift's CRDs; without it hack/tools/openshift-crds.sh fetches them
// (once, then from its cache).
const EnvOpenShiftCRDs = "WINNODE_OPENSHIFT_CRDS"

// OpenShift is what the openshift flavor seeded, for tests.
type OpenShift struct {
	// InternalURL is Infrastructure cluster's status.apiServerInternalURI:
	// the API server under another name than Env.Host (localhost, which
	// its serving certificate carries), as api-int is on OpenShift.
	InternalURL string
	// RenderedWorker names the rendered worker MachineConfig seeded.
	RenderedWorker string
	// ClusterDNS is the cluster DNS address of the seeded rendered worker
	// config's kubelet configuration.
	ClusterDNS string
	// ServiceCA is the certificate (PEM) of the service CA that the
	// simulated service-ca controller signs with (serviceca.go).
	ServiceCA []byte

	serviceCA *serviceCA
	client    client.Client
	bootstrap []byte // the kubeconfig with the node-bootstrapper token
	last      time.Time
}

// Names of what the flavor seeds, as on OpenShift.
const (
	MCONamespace          = "openshift-machine-config-operator"
	NodeBootstrapper      = "node-bootstrapper"
	NodeBootstrapperToken = "node-bootstrapper-token"
	// InfrastructureName is Infrastructure cluster's infrastructureName,
	// the cluster ID that Machines are labelled with.
	InfrastructureName = "winnode-testenv"
)

// openShiftCRDDir is the folder of OpenShift's CRDs.
func openShiftCRDDir() (string, error) {
	if dir := os.Getenv(EnvOpenShiftCRDs); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack/tools/openshift-crds.sh"))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("fetching OpenShift's CRDs with hack/tools/openshift-crds.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// openShiftScheme knows the built-in types and OpenShift's config and
// machineconfiguration types.
func openShiftScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, configv1.Install, mcfgv1.Install} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// seedOpenShift creates the objects an OpenShift 4 cluster has.
func (e *Env) seedOpenShift(ctx context.Context) error {
	s, err := openShiftScheme()
	if err != nil {
		return err
	}
	c, err := client.New(e.Config, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	o := &OpenShift{client: c, InternalURL: strings.Replace(e.Host, "127.0.0.1", "localhost", 1), ClusterDNS: KubernetesDNSIP}
	e.OpenShift = o
	if err := o.seedConfig(ctx, e.Host); err != nil {
		return err
	}
	ca, err := os.ReadFile(e.CACertFile)
	if err != nil {
		return err
	}
	if err := o.seedControllerConfig(ctx, ca); err != nil {
		return err
	}
	if o.bootstrap, err = o.nodeBootstrapperKubeconfig(ctx, ca); err != nil {
		return err
	}
	o.RenderedWorker, err = o.RenderWorker(ctx, RenderedWorkerOptions{ClusterDNS: KubernetesDNSIP})
	return err
}

// createOrGet creates obj, leaving one that exists as it is.
func createOrGet(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// seedConfig creates Infrastructure cluster (platform None, as a cluster
// installed on bare metal without a cloud), Network cluster (the control
// plane's true ranges) and ClusterVersion version.
func (o *OpenShift) seedConfig(ctx context.Context, host string) error {
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: configv1.NonePlatformType}}}
	if err := createOrGet(ctx, o.client, infra); err != nil {
		return err
	}
	infra.Status = configv1.InfrastructureStatus{
		//lint:ignore SA1019 OpenShift 4 still writes the deprecated field beside platformStatus; the test world's Infrastructure is as a real one.
		InfrastructureName: InfrastructureName, Platform: configv1.NonePlatformType,
		PlatformStatus: &configv1.PlatformStatus{Type: configv1.NonePlatformType},
		APIServerURL:   host, APIServerInternalURL: o.InternalURL,
		ControlPlaneTopology:   configv1.HighlyAvailableTopologyMode,
		InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
		CPUPartitioning:        configv1.CPUPartitioningNone,
	}
	if err := o.client.Status().Update(ctx, infra); err != nil {
		return fmt.Errorf("writing the status of Infrastructure cluster: %w", err)
	}
	// Network has no status subresource: its status is written with it.
	entries := []configv1.ClusterNetworkEntry{{CIDR: ClusterCIDR, HostPrefix: 24}}
	network := &configv1.Network{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec:   configv1.NetworkSpec{ClusterNetwork: entries, ServiceNetwork: []string{ServiceCIDR}, NetworkType: "OVNKubernetes"},
		Status: configv1.NetworkStatus{ClusterNetwork: entries, ServiceNetwork: []string{ServiceCIDR}, NetworkType: "OVNKubernetes", ClusterNetworkMTU: 1400}}
	if err := createOrGet(ctx, o.client, network); err != nil {
		return err
	}
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec: configv1.ClusterVersionSpec{ClusterID: "6c7f2f8e-0d1e-4c8b-9a55-3e1d2b7a9c10", Channel: "stable-4.21"}}
	return createOrGet(ctx, o.client, cv)
}

// seedControllerConfig creates ControllerConfig machine-config-controller
// with the cluster CA as the kubelet CA (the test control plane signs the
// API server's kubelet client certificate with it).
func (o *OpenShift) seedControllerConfig(ctx context.Context, ca []byte) error {
	var infra configv1.Infrastructure
	if err := o.client.Get(ctx, client.ObjectKey{Name: "cluster"}, &infra); err != nil {
		return err
	}
	infra.TypeMeta = metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "Infrastructure"}
	infra.ObjectMeta = metav1.ObjectMeta{Name: "cluster"}
	cc := &mcfgv1.ControllerConfig{ObjectMeta: metav1.ObjectMeta{Name: "machine-config-controller"},
		Spec: mcfgv1.ControllerConfigSpec{
			ClusterDNSIP: KubernetesDNSIP, Platform: "none",
			KubeAPIServerServingCAData: ca, RootCAData: ca,
			Images:       map[string]string{},
			ReleaseImage: "quay.io/openshift-release-dev/ocp-release:4.21.0-x86_64",
			Infra:        &infra,
			DNS: &configv1.DNS{TypeMeta: metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "DNS"},
				ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.DNSSpec{BaseDomain: "winnode.test"}},
			IPFamilies: mcfgv1.IPFamiliesIPv4,
			Network:    &mcfgv1.NetworkInfo{},
		}}
	return createOrGet(ctx, o.client, cc)
}

// SetKubeletCA replaces ControllerConfig machine-config-controller's
// kubelet CA (spec.kubeAPIServerServingCAData), as a CA rotation does.
func (o *OpenShift) SetKubeletCA(ctx context.Context, ca []byte) error {
	var cc mcfgv1.ControllerConfig
	if err := o.client.Get(ctx, client.ObjectKey{Name: "machine-config-controller"}, &cc); err != nil {
		return err
	}
	cc.Spec.KubeAPIServerServingCAData = ca
	return o.client.Update(ctx, &cc)
}

// nodeBootstrapperKubeconfig creates the node-bootstrapper ServiceAccount
// in openshift-machine-config-operator, bound to system:node-bootstrapper,
// with its long-lived token Secret (filled by the controller manager's token
// controller), and returns the kubeconfig with that token that Linux workers
// join with (server: the internal URL).
func (o *OpenShift) nodeBootstrapperKubeconfig(ctx context.Context, ca []byte) ([]byte, error) {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MCONamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: NodeBootstrapper, Namespace: MCONamespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:node-bootstrapper"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: NodeBootstrapper, Namespace: MCONamespace}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: NodeBootstrapperToken, Namespace: MCONamespace,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: NodeBootstrapper}},
			Type: corev1.SecretTypeServiceAccountToken},
	}
	for _, obj := range objs {
		if err := createOrGet(ctx, o.client, obj); err != nil {
			return nil, err
		}
	}
	var token []byte
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var s corev1.Secret
		if err := o.client.Get(ctx, client.ObjectKey{Namespace: MCONamespace, Name: NodeBootstrapperToken}, &s); err != nil {
			return false, err
		}
		token = s.Data[corev1.ServiceAccountTokenKey]
		return len(token) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the controller manager to fill Secret %s/%s: %w", MCONamespace, NodeBootstrapperToken, err)
	}
	return bootstrapperKubeconfig(o.InternalURL, ca, string(token))
}

// renderedName is a rendered MachineConfig's name as the Machine Config
// Operator forms it: the pool, then a hash of the rendered config.
func renderedName(config []byte) string {
	sum := sha256.Sum256(config)
	return "rendered-worker-" + hex.EncodeToString(sum[:])[:32]
}

// startOpenShift seeds the openshift flavor's objects and starts its
// simulated service-ca controller.
func (e *Env) startOpenShift(ctx context.Context) error {
	if err := e.seedOpenShift(ctx); err != nil {
		return fmt.Errorf("seeding the openshift flavor: %w", err)
	}
	if err := e.startOpenShiftServiceCA(); err != nil {
		return fmt.Errorf("starting the openshift flavor's service CA: %w", err)
	}
	return nil
}

// startOpenShiftServiceCA runs the simulated service-ca controller
// (serviceca.go) until Stop, logging to service-ca.log in the Env's folder.
func (e *Env) startOpenShiftServiceCA() error {
	log, err := os.Create(filepath.Join(e.Dir, "service-ca.log"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stopControllers = func() { cancel(); _ = log.Close() }
	e.OpenShift.serviceCA, err = startServiceCA(ctx, e.Config, log)
	if err == nil {
		e.OpenShift.ServiceCA = e.OpenShift.serviceCA.bundle()
	}
	return err
}

// RotateServiceCA replaces the service CA, as deleting OpenShift's signing
// key does (no grace period: serviceca.go), writes the new bundle into the
// annotated ConfigMaps and new certificates into the serving Secrets, and
// sets ServiceCA to the new CA's certificate. Not to be called from
// parallel goroutines.
func (o *OpenShift) RotateServiceCA(ctx context.Context) error {
	ca, err := o.serviceCA.rotate(ctx)
	if err != nil {
		return fmt.Errorf("rotating the simulated service CA: %w", err)
	}
	o.ServiceCA = ca
	return nil
}
