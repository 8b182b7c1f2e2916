package plan

import (
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/winpath"
)

// ContainerdEndpoint is containerd's CRI endpoint on Windows.
const ContainerdEndpoint = "npipe://./pipe/containerd-containerd"

// KubeletConfigOptions are the inputs of the Windows kubelet configuration.
type KubeletConfigOptions struct {
	// ClientCAFile is the Windows path of the CA that signs clients of the
	// kubelet's API (the API server's kubelet client certificate):
	// `C:\k\kubelet-ca.crt`.
	ClientCAFile string
	// ClusterDNS are the cluster DNS service's IPs; ClusterDomain defaults
	// to "cluster.local".
	ClusterDNS    []string
	ClusterDomain string
	// SystemReserved defaults to cpu 500m, memory 1Gi, ephemeral-storage
	// 1Gi, as the Windows Machine Config Operator reserves.
	SystemReserved map[string]string
	// Verbosity is the kubelet's log level (0 leaves the default).
	Verbosity int
	// ProviderID, when set, is the node's cloud provider ID.
	ProviderID string
}

// DefaultSystemReserved is what a Windows node keeps for the OS.
var DefaultSystemReserved = map[string]string{"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"}

// KubeletConfig builds the KubeletConfiguration of a Windows worker: no QoS
// cgroups and no node-allocatable enforcement (Windows has no cgroups), no
// resolv.conf, client and serving certificates bootstrapped and rotated,
// containerd over its named pipe, and the os=Windows:NoSchedule taint so
// Linux pods stay off.
func KubeletConfig(o KubeletConfigOptions) (*kubeletv1beta1.KubeletConfiguration, error) {
	ca, err := winpath.Parse(o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("kubelet configuration: client CA file: %w", err)
	}
	reserved := o.SystemReserved
	if reserved == nil {
		reserved = maps.Clone(DefaultSystemReserved)
	}
	domain := o.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	c := &kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: kubeletv1beta1.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: ca.String()},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:            kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		ClusterDomain:            domain,
		ClusterDNS:               o.ClusterDNS,
		CgroupsPerQOS:            ptr.To(false),
		EnforceNodeAllocatable:   []string{},
		ResolverConfig:           ptr.To(""),
		RotateCertificates:       true,
		ServerTLSBootstrap:       true,
		SystemReserved:           reserved,
		ContainerRuntimeEndpoint: ContainerdEndpoint,
		ProviderID:               o.ProviderID,
		RegisterWithTaints: []corev1.Taint{{
			Key: "os", Value: "Windows", Effect: corev1.TaintEffectNoSchedule,
		}},
		// Reading logs through the kubelet (docs/troubleshooting.md), both
		// on by default and written out because winnode relies on them:
		// /containerLogs/ (kubectl logs) is one of the debugging handlers,
		// and /logs/ serves the node's log folder, C:\var\log on Windows
		// (the kubelet's http.FileServer of /var/log/, which Windows reads
		// on the current drive), as the API server's node proxy
		// /api/v1/nodes/NODE/proxy/logs/ and `oc adm node-logs --path`
		// read it. enableSystemLogQuery (the ?query= form, which runs
		// Get-WinEvent on Windows) stays off, its default: the kubelet's
		// documentation advises it only while debugging.
		EnableDebuggingHandlers: ptr.To(true),
		EnableSystemLogHandler:  ptr.To(true),
	}
	if o.Verbosity > 0 {
		c.Logging.Verbosity = logsapi.VerbosityLevel(o.Verbosity)
	}
	return c, nil
}

// KubeletConfigYAML renders the configuration as the kubelet reads it
// (--config). Zero-valued fields that the kubelet defaults are left out;
// enforceNodeAllocatable is written as an explicit empty list, because the
// kubelet would otherwise default it to ["pods"], which fails on Windows.
func KubeletConfigYAML(c *kubeletv1beta1.KubeletConfiguration) ([]byte, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("kubelet configuration: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("kubelet configuration: %w", err)
	}
	prune(m)
	if c.EnforceNodeAllocatable != nil {
		m["enforceNodeAllocatable"] = c.EnforceNodeAllocatable
	}
	return yaml.Marshal(m)
}

// prune removes zero durations, zero numbers and empty objects that the
// struct's encoding writes although they only mean "use the default".
// Booleans and strings are kept: false and "" are meaningful (cgroupsPerQOS,
// resolvConf).
func prune(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case string:
			if v == "0s" || v == "0" { // durations, quantities
				delete(m, k)
			}
		case float64:
			if v == 0 {
				delete(m, k)
			}
		case nil:
			delete(m, k)
		}
	}
}
