package configure

import (
	"context"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/plan"
)

// credentials is what the plan needs from the cluster, and the bootstrap
// kubeconfig to upload (nil when the host's kubelet already has its
// certificate and the installed bootstrap kubeconfig is kept as it is).
type credentials struct {
	cluster   plan.ClusterFacts
	bootstrap []byte
}

// credentials gathers the cluster facts and, for a host whose kubelet has
// not joined yet, a bootstrap token: the instance's own token when it is
// still valid for a while, else a new one (older ones revoked), recorded in
// the status before it reaches the host so that the CSR approver knows it.
// A host whose Node exists keeps its installed bootstrap kubeconfig: no
// token is issued, and the plan stays the same.
func (c *Configurer) credentials(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, info *plan.Info, node *corev1.Node) (*credentials, error) {
	fail := func(err error) (*credentials, error) {
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonCredentialsFailed, err.Error())
		return nil, stepErr(StepCredentials, winnodev1.ReasonCredentialsFailed, err)
	}
	ci, err := bootstrap.LoadClusterInfo(ctx, c.Kube)
	if err != nil {
		return fail(err)
	}
	dns, domain := clusterDNS(ctx, c.Kube)
	cr := &credentials{cluster: plan.ClusterFacts{Server: ci.Server, CAData: ci.CAData, ClusterDNS: dns, ClusterDomain: domain}}

	if node != nil && info.InstalledPlan != nil {
		if sum, ok := lookupFold(info.InstalledPlan.Files, plan.BootstrapKubeconfigPath); ok {
			fi, err := cl.Stat(ctx, plan.BootstrapKubeconfigPath)
			if err == nil && fi.Mode().IsRegular() {
				cr.cluster.BootstrapKubeconfig = plan.FileDigest{SHA256: sum, Size: fi.Size()}
				return cr, nil
			}
		}
	}

	if err := bootstrap.EnsureRBAC(ctx, c.Kube); err != nil {
		return fail(err)
	}
	tok, err := c.token(ctx, inst)
	if err != nil {
		return fail(err)
	}
	cr.bootstrap, err = bootstrap.BootstrapKubeconfig(*ci, *tok)
	if err != nil {
		return fail(err)
	}
	cr.cluster.BootstrapKubeconfig = plan.DigestOf(cr.bootstrap)
	return cr, nil
}

// token returns the instance's bootstrap token: the one recorded in the
// status when it exists and has at least TokenMinValid left, else a new one
// after revoking every token of the instance (so a crash between issuing and
// recording never leaks one). The new token's ID is persisted at once.
func (c *Configurer) token(ctx context.Context, inst *winnodev1.WindowsInstance) (*bootstrap.Token, error) {
	if id := inst.Status.BootstrapTokenID; id != "" {
		tok, err := bootstrap.GetToken(ctx, c.Kube, id)
		if err != nil {
			return nil, err
		}
		if tok != nil && tok.Instance == inst.Name && time.Until(tok.Expiration) > c.tokenMinValid() {
			return tok, nil
		}
	}
	if err := bootstrap.RevokeInstanceTokens(ctx, c.Kube, inst.Name); err != nil {
		return nil, err
	}
	tok, err := bootstrap.CreateToken(ctx, c.Kube, inst.Name, c.TokenTTL)
	if err != nil {
		return nil, err
	}
	inst.Status.BootstrapTokenID = tok.ID
	if err := c.save(ctx, inst); err != nil {
		// The token is not recorded: revoke it rather than leak it.
		_ = bootstrap.RevokeToken(context.WithoutCancel(ctx), c.Kube, tok.ID)
		inst.Status.BootstrapTokenID = ""
		return nil, err
	}
	c.Log.Info("issued a bootstrap token", "instance", inst.Name, "token", tok.String(), "expires", tok.Expiration)
	return tok, nil
}

// revokeTokens revokes every bootstrap token of the instance.
func (c *Configurer) revokeTokens(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	if err := bootstrap.RevokeInstanceTokens(ctx, c.Kube, inst.Name); err != nil {
		return err
	}
	if id := inst.Status.BootstrapTokenID; id != "" {
		if err := bootstrap.RevokeToken(ctx, c.Kube, id); err != nil {
			return err
		}
	}
	inst.Status.BootstrapTokenID = ""
	return nil
}

func lookupFold(m map[string]string, key string) (string, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// clusterDNS finds the cluster DNS service: kubeadm's kubelet-config
// ConfigMap (clusterDNS, clusterDomain), else the kube-dns Service. A
// cluster with neither gets no DNS setting (the kubelet then gives pods the
// host's resolvers).
func clusterDNS(ctx context.Context, kube kubernetes.Interface) ([]string, string) {
	cm, err := kube.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "kubelet-config", metav1.GetOptions{})
	if err == nil {
		if ips, domain := parseKubeletConfigDNS(cm.Data["kubelet"]); len(ips) > 0 {
			return ips, domain
		}
	} else if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return nil, ""
	}
	svc, err := kube.CoreV1().Services(metav1.NamespaceSystem).Get(ctx, "kube-dns", metav1.GetOptions{})
	if err == nil && net.ParseIP(svc.Spec.ClusterIP) != nil {
		return []string{svc.Spec.ClusterIP}, ""
	}
	return nil, ""
}

// parseKubeletConfigDNS reads clusterDNS and clusterDomain from kubeadm's
// KubeletConfiguration (kube-system/kubelet-config, key "kubelet"). What is
// not valid is ignored: entries that are not IP addresses, a domain that is
// not a DNS name, or a document that is not YAML (then nothing).
func parseKubeletConfigDNS(data string) ([]string, string) {
	var cfg struct {
		ClusterDNS    []string `json:"clusterDNS"`
		ClusterDomain string   `json:"clusterDomain"`
	}
	if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
		return nil, ""
	}
	var ips []string
	for _, ip := range cfg.ClusterDNS {
		if parsed := net.ParseIP(ip); parsed != nil {
			ips = append(ips, parsed.String())
		}
	}
	domain := cfg.ClusterDomain
	if len(validation.IsDNS1123Subdomain(domain)) > 0 {
		domain = ""
	}
	return ips, domain
}
