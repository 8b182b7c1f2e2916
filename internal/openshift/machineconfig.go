package openshift

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/ignition"
)

// RenderedWorkerPrefix starts the name of every rendered worker
// MachineConfig: the Machine Config Operator merges the worker pool's
// MachineConfigs into one, rendered-worker-<hash>, for each change.
const RenderedWorkerPrefix = "rendered-worker-"

// newestRenderedWorker is the rendered worker MachineConfig created last
// (the Windows Machine Config Operator's choice): the pool's newest
// configuration, which the Linux workers are moving to.
func newestRenderedWorker(ctx context.Context, r client.Reader) (*mcfgv1.MachineConfig, error) {
	var list mcfgv1.MachineConfigList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing MachineConfigs (machineconfiguration.openshift.io/v1) for the rendered worker config: %w", err)
	}
	mc := NewestRenderedWorker(list.Items)
	if mc == nil {
		return nil, fmt.Errorf("no rendered worker MachineConfig (%s*) with a config: the Machine Config Operator has not rendered the worker pool", RenderedWorkerPrefix)
	}
	return mc, nil
}

// NewestRenderedWorker picks the newest rendered worker config of mcs
// (creation time, then name, so the choice is stable), nil when there is
// none with a config.
func NewestRenderedWorker(mcs []mcfgv1.MachineConfig) *mcfgv1.MachineConfig {
	var newest *mcfgv1.MachineConfig
	for i := range mcs {
		mc := &mcs[i]
		if !strings.HasPrefix(mc.Name, RenderedWorkerPrefix) || len(mc.Spec.Config.Raw) == 0 {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&mc.CreationTimestamp) ||
			(newest.CreationTimestamp.Equal(&mc.CreationTimestamp) && mc.Name > newest.Name) {
			newest = mc
		}
	}
	return newest
}

// RenderedWorker is what a rendered worker MachineConfig says that a
// Windows kubelet shares with the Linux workers.
type RenderedWorker struct {
	CloudProvider string
	CloudConfig   []byte
	ClusterDNS    []string
	ClusterDomain string
	// CAData is the certificate-authority-data of the kubeconfig the
	// config carries at /etc/kubernetes/kubeconfig (nil when it carries
	// none: the Machine Config Server adds it when serving the config).
	CAData []byte
}

// ParseRenderedWorker reads a rendered worker MachineConfig's Ignition
// config. Errors name the MachineConfig and what in it is wrong.
func ParseRenderedWorker(mc *mcfgv1.MachineConfig) (*RenderedWorker, error) {
	fail := func(format string, args ...any) (*RenderedWorker, error) {
		return nil, fmt.Errorf("MachineConfig %s: spec.config: "+format, append([]any{mc.Name}, args...)...)
	}
	cfg, err := ignition.Parse(mc.Spec.Config.Raw)
	if err != nil {
		return fail("%v", err)
	}
	k, err := cfg.Kubelet()
	if err != nil {
		return fail("%v", err)
	}
	w := &RenderedWorker{CloudProvider: k.CloudProvider}
	// The kubelet has had no built-in cloud providers since Kubernetes
	// 1.31: only an external cloud controller manager, or none.
	if k.CloudProvider != "" && k.CloudProvider != "external" {
		return fail("the kubelet unit's --cloud-provider=%s is a built-in cloud provider, which the kubelet no longer has (want external or none)", k.CloudProvider)
	}
	if k.CloudConfigPath != "" {
		if _, ok, err := cfg.File(k.CloudConfigPath); err != nil || !ok {
			return fail("the kubelet unit's --cloud-config names %s, which the config does not carry (%v)", k.CloudConfigPath, err)
		}
		w.CloudConfig = k.CloudConfig
	}
	if len(k.Config) > 0 {
		if w.ClusterDNS, w.ClusterDomain, err = kubeletDNS(k.Config); err != nil {
			return fail("the kubelet's configuration %s: %v", k.ConfigPath, err)
		}
	}
	kubeconfig, ok, err := cfg.File(ignition.KubeconfigPath)
	if err != nil {
		return fail("%v", err)
	}
	if ok {
		if w.CAData, err = kubeconfigCA(kubeconfig); err != nil {
			return fail("%s: %v", ignition.KubeconfigPath, err)
		}
	}
	return w, nil
}

// kubeletDNS reads clusterDNS and clusterDomain of a KubeletConfiguration
// (YAML or JSON, as the Machine Config Operator writes it).
func kubeletDNS(data []byte) ([]string, string, error) {
	var kc struct {
		ClusterDNS    []string `json:"clusterDNS"`
		ClusterDomain string   `json:"clusterDomain"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, "", fmt.Errorf("not a KubeletConfiguration: %v", err)
	}
	for _, ip := range kc.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return nil, "", fmt.Errorf("clusterDNS %q is not an IP address", ip)
		}
	}
	if d := kc.ClusterDomain; d != "" && len(validation.IsDNS1123Subdomain(d)) > 0 {
		return nil, "", fmt.Errorf("clusterDomain %q is not a DNS name", d)
	}
	return slices.Clone(kc.ClusterDNS), kc.ClusterDomain, nil
}

// kubeconfigCA is the CA data of a kubeconfig's one cluster. The
// kubeconfig's credentials (the node-bootstrapper token) are not read.
func kubeconfigCA(data []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %v", err)
	}
	if len(cfg.Clusters) != 1 {
		return nil, fmt.Errorf("has %d clusters; want exactly one", len(cfg.Clusters))
	}
	for name, cl := range cfg.Clusters {
		if len(cl.CertificateAuthorityData) == 0 {
			return nil, fmt.Errorf("cluster %q has no certificate-authority-data", name)
		}
		if _, err := certutil.ParseCertsPEM(cl.CertificateAuthorityData); err != nil {
			return nil, fmt.Errorf("cluster %q: certificate-authority-data: %v", name, err)
		}
		return cl.CertificateAuthorityData, nil
	}
	return nil, nil
}
