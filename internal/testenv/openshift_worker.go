package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// RenderedWorkerOptions are what a rendered worker config of the test
// world varies.
type RenderedWorkerOptions struct {
	// ClusterDNS is the clusterDNS of the kubelet's configuration.
	ClusterDNS string
	// CloudProvider ("" or "external") and CloudConfig (nil: no
	// --cloud-config) are the kubelet unit's.
	CloudProvider string
	CloudConfig   []byte
}

// kubeletUnit is the worker kubelet unit of the Machine Config Operator's
// templates (templates/worker/01-worker-kubelet), on a cluster of platform
// None: an empty --cloud-provider unless the options name one.
const kubeletUnit = `[Unit]
Description=Kubernetes Kubelet
Requires=crio.service kubelet-dependencies.target
After=kubelet-dependencies.target

[Service]
Type=notify
ExecStartPre=/bin/mkdir --parents /etc/kubernetes/manifests
Environment="KUBELET_NODE_IP=0.0.0.0"
EnvironmentFile=/etc/os-release
EnvironmentFile=-/etc/kubernetes/kubelet-workaround
EnvironmentFile=-/etc/kubernetes/kubelet-env
EnvironmentFile=/etc/node-sizing.env

ExecStart=/usr/local/bin/kubenswrapper \
    /usr/bin/kubelet \
      --config=/etc/kubernetes/kubelet.conf \
      --bootstrap-kubeconfig=/etc/kubernetes/kubeconfig \
      --kubeconfig=/var/lib/kubelet/kubeconfig \
      --container-runtime-endpoint=/var/run/crio/crio.sock \
      --runtime-cgroups=/system.slice/crio.service \
      --node-labels=node-role.kubernetes.io/worker,node.openshift.io/os_id=${ID} \
      --node-ip=${KUBELET_NODE_IP} \
      --minimum-container-ttl-duration=6m0s \
      --volume-plugin-dir=/etc/kubernetes/kubelet-plugins/volume/exec \
      --cloud-provider=%s %s\
      --hostname-override=${KUBELET_NODE_NAME} \
      --provider-id=${KUBELET_PROVIDERID} \
      --v=${KUBELET_LOG_LEVEL}

Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
`

// RenderWorker creates a rendered worker MachineConfig, newer than every
// one before it (its creation second is later), and returns its name: the
// kubelet unit, its logging drop-in, the kubelet's configuration, the
// bootstrap kubeconfig with the node-bootstrapper token and, when set, the
// cloud config, in an Ignition 3.5.0 config built with Ignition's types.
func (o *OpenShift) RenderWorker(ctx context.Context, opts RenderedWorkerOptions) (string, error) {
	raw, err := o.workerIgnition(opts)
	if err != nil {
		return "", err
	}
	// Rendered configs are told apart by creation time, in seconds.
	if wait := time.Until(o.last.Truncate(time.Second).Add(time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: renderedName(raw), Annotations: map[string]string{
			"machineconfiguration.openshift.io/generated-by-controller-version": "winnode-testenv",
			"machineconfiguration.openshift.io/release-image-version":           "4.21.0",
		}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
	}
	if err := o.client.Create(ctx, mc); err != nil {
		return "", fmt.Errorf("creating MachineConfig %s: %w", mc.Name, err)
	}
	o.last = mc.CreationTimestamp.Time
	return mc.Name, nil
}

// workerIgnition is the rendered worker's Ignition config.
func (o *OpenShift) workerIgnition(opts RenderedWorkerOptions) ([]byte, error) {
	kubeletConf, err := json.Marshal(map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
		"clusterDNS": []string{opts.ClusterDNS}, "clusterDomain": "cluster.local",
		"rotateCertificates": true, "serverTLSBootstrap": true,
		"authentication": map[string]any{"x509": map[string]any{"clientCAFile": "/etc/kubernetes/kubelet-ca.crt"}},
	})
	if err != nil {
		return nil, err
	}
	file := func(path string, mode int, data []byte) types.File {
		return types.File{Node: types.Node{Path: path, Overwrite: ptr.To(true)},
			FileEmbedded1: types.FileEmbedded1{Mode: ptr.To(mode),
				Contents: types.Resource{Source: ptr.To(dataurl.EncodeBytes(data))}}}
	}
	cloudConfigFlag := ""
	files := []types.File{
		file("/etc/kubernetes/kubeconfig", 0o600, o.bootstrap),
		file("/etc/kubernetes/kubelet.conf", 0o644, kubeletConf),
	}
	if opts.CloudConfig != nil {
		cloudConfigFlag = `\
      --cloud-config=/etc/kubernetes/cloud.conf `
		files = append(files, file("/etc/kubernetes/cloud.conf", 0o644, opts.CloudConfig))
	}
	cfg := types.Config{
		Ignition: types.Ignition{Version: types.MaxVersion.String()},
		Storage:  types.Storage{Files: files},
		Systemd: types.Systemd{Units: []types.Unit{
			{Name: "kubelet.service", Enabled: ptr.To(true), Contents: ptr.To(fmt.Sprintf(kubeletUnit, opts.CloudProvider, cloudConfigFlag)),
				Dropins: []types.Dropin{{Name: "20-logging.conf", Contents: ptr.To("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=2\"\n")}}},
			{Name: "crio.service", Enabled: ptr.To(true)},
		}},
	}
	return json.Marshal(cfg)
}

// bootstrapperKubeconfig is the kubeconfig of /etc/kubernetes/kubeconfig:
// the API server's internal URL and CA, and the node-bootstrapper token.
func bootstrapperKubeconfig(server string, ca []byte, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["kubelet"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubelet"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "kubelet"}
	cfg.CurrentContext = "kubelet"
	return clientcmd.Write(*cfg)
}

// DeleteRenderedWorker deletes a rendered worker MachineConfig (a test
// putting the world back as it found it).
func (o *OpenShift) DeleteRenderedWorker(ctx context.Context, name string) error {
	return o.client.Delete(ctx, &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name}})
}
