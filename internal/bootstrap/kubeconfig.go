package bootstrap

import (
	"fmt"

	"github.com/winnode/winnode/internal/kubeconfig"
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
	out, err := kubeconfig.Bootstrap(ci.Server, ci.CAData, token)
	if err != nil {
		return nil, fmt.Errorf("rendering the bootstrap kubeconfig for instance %s: %w", instance, err)
	}
	return out, nil
}
