package bootstrap

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig names, as kubeadm writes them in bootstrap-kubelet.conf.
const (
	kubeconfigCluster = "kubernetes"
	kubeconfigUser    = "tls-bootstrap-token-user"
	kubeconfigContext = "tls-bootstrap-token-user@kubernetes"
)

// BootstrapKubeconfig renders the kubeconfig a host's kubelet is started with
// (--bootstrap-kubeconfig): the API server URL, the cluster CA and the
// bootstrap token. It holds a secret: write it only to the host, never to a
// log, event or status.
func BootstrapKubeconfig(ci ClusterInfo, tok Token) ([]byte, error) {
	if tok.ID == "" || tok.Secret == "" {
		return nil, fmt.Errorf("rendering the bootstrap kubeconfig for instance %s: empty bootstrap token", tok.Instance)
	}
	return bearerKubeconfig(ci, tok.Instance, tok.Value())
}

// ServiceAccountKubeconfig is BootstrapKubeconfig for the ServiceAccount
// form of join credentials (serviceaccount.go). It holds a secret too.
func ServiceAccountKubeconfig(ci ClusterInfo, tok ServiceAccountToken) ([]byte, error) {
	if tok.Value == "" {
		return nil, fmt.Errorf("rendering the bootstrap kubeconfig for instance %s: empty ServiceAccount token", tok.Instance)
	}
	return bearerKubeconfig(ci, tok.Instance, tok.Value)
}

func bearerKubeconfig(ci ClusterInfo, instance, token string) ([]byte, error) {
	if ci.Server == "" || len(ci.CAData) == 0 {
		return nil, fmt.Errorf("rendering the bootstrap kubeconfig for instance %s: cluster info lacks the server URL or CA", instance)
	}
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{kubeconfigCluster: {
			Server:                   ci.Server,
			CertificateAuthorityData: ci.CAData,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{kubeconfigUser: {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{kubeconfigContext: {Cluster: kubeconfigCluster, AuthInfo: kubeconfigUser}},
		CurrentContext: kubeconfigContext,
	}
	out, err := clientcmd.Write(cfg)
	if err != nil {
		return nil, fmt.Errorf("rendering the bootstrap kubeconfig for instance %s: %w", instance, err)
	}
	return out, nil
}
