package bootstrap

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// ClusterInfo is what a joining kubelet needs to know about the cluster.
type ClusterInfo struct {
	// Server is the API server URL nodes use ("https://host:port").
	Server string
	// CAData is the PEM bundle of the cluster CA(s) that signed the API
	// server's certificate.
	CAData []byte
}

// LoadClusterInfo reads the API server URL and the cluster CA from the
// kubeconfig in kube-public/cluster-info, which kubeadm (and internal/testenv)
// publish for joining nodes.
func LoadClusterInfo(ctx context.Context, c kubernetes.Interface) (*ClusterInfo, error) {
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s (kubeadm creates it; on other clusters create it with the API server URL and CA in a kubeconfig under key %q): %w",
			metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, bootstrapapi.KubeConfigKey, err)
	}
	return ParseClusterInfo([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
}

// ParseClusterInfo reads the kubeconfig held by cluster-info: exactly one
// cluster with a server URL and inline CA data.
func ParseClusterInfo(kubeconfig []byte) (*ClusterInfo, error) {
	const where = "kube-public/cluster-info key " + bootstrapapi.KubeConfigKey
	if len(kubeconfig) == 0 {
		return nil, fmt.Errorf("%s is empty; it must hold a kubeconfig with the API server URL and CA", where)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%s is not a kubeconfig: %w", where, err)
	}
	if len(cfg.Clusters) != 1 {
		return nil, fmt.Errorf("%s has %d clusters; want exactly one", where, len(cfg.Clusters))
	}
	for name, cl := range cfg.Clusters {
		if cl.Server == "" {
			return nil, fmt.Errorf("%s: cluster %q has no server URL", where, name)
		}
		if len(cl.CertificateAuthorityData) == 0 {
			return nil, fmt.Errorf("%s: cluster %q has no certificate-authority-data", where, name)
		}
		if _, err := certutil.ParseCertsPEM(cl.CertificateAuthorityData); err != nil {
			return nil, fmt.Errorf("%s: cluster %q: certificate-authority-data: %w", where, name, err)
		}
		return &ClusterInfo{Server: cl.Server, CAData: cl.CertificateAuthorityData}, nil
	}
	panic("unreachable")
}
