// Package kubeconfig renders the bootstrap kubeconfig a Windows host's
// kubelet starts with (--bootstrap-kubeconfig), in one place for the
// operator's Push mode (internal/bootstrap) and the agent's Pull mode
// (winnode-agent join). It needs only client-go's clientcmd, so the agent
// links no more of client-go than that.
package kubeconfig

import (
	"errors"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names inside the kubeconfig, as kubeadm writes them in
// bootstrap-kubelet.conf.
const (
	clusterName = "kubernetes"
	userName    = "tls-bootstrap-token-user"
	contextName = "tls-bootstrap-token-user@kubernetes"
)

// Bootstrap is the kubeconfig of the API server at server, trusting caData,
// authenticating with the bearer token (a bootstrap token, or a join
// ServiceAccount's token). It holds a secret: write it only to the host,
// never to a log, event or status.
func Bootstrap(server string, caData []byte, token string) ([]byte, error) {
	if server == "" || len(caData) == 0 {
		return nil, errors.New("no API server URL or CA")
	}
	if token == "" {
		return nil, errors.New("empty token")
	}
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{clusterName: {Server: server, CertificateAuthorityData: caData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{userName: {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{contextName: {Cluster: clusterName, AuthInfo: userName}},
		CurrentContext: contextName,
	}
	return clientcmd.Write(cfg)
}
