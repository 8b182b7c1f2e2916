package workload

import (
	"context"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// KubeconfigKey is the key of the kubeconfig in a Cluster's kubeconfig
// Secret (Cluster API's secret.KubeconfigDataName).
const KubeconfigKey = "value"

// KubeconfigSecretName is the name of Cluster cluster's kubeconfig Secret,
// in the Cluster's namespace (Cluster API's secret.Name(cluster,
// secret.Kubeconfig)); the control-plane provider writes it.
func KubeconfigSecretName(cluster string) string { return cluster + "-kubeconfig" }

// The operator reads kubeconfig Secrets by name, never lists them. It may
// read them only in the namespaces where an administrator binds the
// ClusterRole winnode-workload-kubeconfigs to it with a RoleBinding
// (config/rbac/workload_kubeconfigs.yaml, docs/install.md): a rule of
// get on every Secret would reach kube-system's too, which the operator
// must never read. So there is no +kubebuilder:rbac marker here: markers
// make cluster-wide rules or rules of a fixed namespace.

// adminConfig reads Cluster ref's kubeconfig Secret from the API server and
// returns the client configuration it holds. The Secret is read afresh at
// each call and the configuration is not kept: the callers use it for one
// installation or one token.
func (c *Clusters) adminConfig(ctx context.Context, ref winnodev1.ClusterRef) (*rest.Config, error) {
	name := KubeconfigSecretName(ref.Name)
	var s corev1.Secret
	err := c.Secrets.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, fail(ref, ReasonKubeconfigSecretNotFound,
			"Secret %s/%s does not exist: Cluster API's control-plane provider writes it once the control plane is up; nothing joins that cluster until it does", ref.Namespace, name)
	}
	if apierrors.IsForbidden(err) {
		return nil, fail(ref, ReasonKubeconfigForbidden,
			"the operator may not read Secret %s/%s: bind the ClusterRole winnode-workload-kubeconfigs to its ServiceAccount in namespace %s with a RoleBinding (docs/install.md)", ref.Namespace, name, ref.Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s, the kubeconfig of Cluster %s: %w", ref.Namespace, name, ref, err)
	}
	cfg, err := ParseKubeconfig(s.Data[KubeconfigKey])
	if err != nil {
		return nil, fail(ref, ReasonKubeconfigInvalid, "Secret %s/%s, key %q: %v", ref.Namespace, name, KubeconfigKey, err)
	}
	cfg.Timeout = c.timeout()
	cfg.UserAgent = userAgent
	return cfg, nil
}

// ParseKubeconfig reads a workload cluster's admin kubeconfig: the cluster
// and user of its current context (or of its only context), an https
// server, the CA inline, and inline credentials (a client certificate and
// key, or a token). Anything that would make the operator run a program
// (exec, auth-provider), read one of its own files (paths to a CA,
// certificate, key or token: a Secret's writer could name the operator's
// own ServiceAccount token and a server of theirs), skip TLS checks or go
// through a proxy is refused, naming the field: whoever may write a
// Secret in a Cluster's namespace decides what the kubeconfig says, and
// the operator must not do more for them than talk to that server.
func ParseKubeconfig(data []byte) (*rest.Config, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty: want a kubeconfig")
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %v", err)
	}
	ctxName := cfg.CurrentContext
	if ctxName == "" && len(cfg.Contexts) == 1 {
		for name := range cfg.Contexts {
			ctxName = name
		}
	}
	kctx := cfg.Contexts[ctxName]
	if kctx == nil {
		return nil, fmt.Errorf("no current context (current-context %q, %d contexts)", cfg.CurrentContext, len(cfg.Contexts))
	}
	cluster, user := cfg.Clusters[kctx.Cluster], cfg.AuthInfos[kctx.AuthInfo]
	if cluster == nil || user == nil {
		return nil, fmt.Errorf("context %q names cluster %q and user %q, which it does not define", ctxName, kctx.Cluster, kctx.AuthInfo)
	}
	if err := checkCluster(kctx.Cluster, cluster); err != nil {
		return nil, err
	}
	if err := checkUser(kctx.AuthInfo, user); err != nil {
		return nil, err
	}
	only := clientcmdapi.NewConfig()
	only.Clusters["c"], only.AuthInfos["u"] = cluster, user
	only.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	only.CurrentContext = "c"
	rc, err := clientcmd.NewDefaultClientConfig(*only, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %q: %v", ctxName, err)
	}
	return rc, nil
}

// checkCluster accepts an https server with its CA inline, nothing else.
func checkCluster(name string, c *clientcmdapi.Cluster) error {
	u, err := url.Parse(c.Server)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("cluster %q: server %q is not an https URL", name, c.Server)
	case c.CertificateAuthority != "":
		return fmt.Errorf("cluster %q: certificate-authority names a file (%s); winnode reads no file a Secret names: inline the CA (certificate-authority-data)", name, c.CertificateAuthority)
	case len(c.CertificateAuthorityData) == 0:
		return fmt.Errorf("cluster %q: no certificate-authority-data: winnode trusts the workload cluster's API server only through the CA its kubeconfig gives", name)
	case c.InsecureSkipTLSVerify:
		return fmt.Errorf("cluster %q: insecure-skip-tls-verify is set; winnode checks the workload cluster's API server certificate", name)
	case c.ProxyURL != "":
		return fmt.Errorf("cluster %q: proxy-url is set; winnode connects to workload clusters directly", name)
	}
	return nil
}

// checkUser accepts inline credentials, nothing that runs or reads.
func checkUser(name string, u *clientcmdapi.AuthInfo) error {
	switch {
	case u.Exec != nil:
		return fmt.Errorf("user %q: exec (%s) would run a program in the operator; winnode takes inline credentials only", name, u.Exec.Command)
	case u.AuthProvider != nil:
		return fmt.Errorf("user %q: auth-provider %q would run a plugin in the operator; winnode takes inline credentials only", name, u.AuthProvider.Name)
	case u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "":
		return fmt.Errorf("user %q: names a file (client-certificate, client-key or tokenFile); winnode reads no file a Secret names: inline the credentials", name)
	case u.Impersonate != "" || len(u.ImpersonateGroups) > 0 || u.ImpersonateUID != "":
		return fmt.Errorf("user %q: impersonates another user; winnode acts as the kubeconfig's own user", name)
	case u.Username != "" || u.Password != "":
		return fmt.Errorf("user %q: basic authentication (username and password) is not supported by Kubernetes", name)
	case u.Token == "" && (len(u.ClientCertificateData) == 0 || len(u.ClientKeyData) == 0):
		return fmt.Errorf("user %q: no credentials: want client-certificate-data and client-key-data, or a token", name)
	}
	return nil
}

// userAgent is the operator's user agent in workload clusters.
const userAgent = "winnode-operator"

func (c *Clusters) timeout() time.Duration { return orDefault(c.Timeout, 15*time.Second) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
