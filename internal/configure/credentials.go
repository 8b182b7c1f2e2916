package configure

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/winnode/winnode/internal/platform"
)

// credentials is what the plan needs from the cluster, and the bootstrap
// kubeconfig to upload (nil when the host's kubelet already has its
// certificate and the installed bootstrap kubeconfig is kept as it is).
type credentials struct {
	cluster   plan.ClusterFacts
	bootstrap []byte
	// source says where the cluster facts came from (clusterfacts.go).
	source string
	// metricsKey is windows_exporter's serving key to upload (metrics.go);
	// nil: no exporter.
	metricsKey []byte
}

// credentials gathers the cluster facts and, for a host whose kubelet has
// not joined yet, its join credentials in a bootstrap kubeconfig, in one of
// two forms (docs/credentials.md): a bootstrap token, or a token of a join
// ServiceAccount where bootstrap tokens do not authenticate (joinMode).
// Either is recorded in the status before it reaches the host so that the
// CSR approver knows it. A host whose Node exists keeps its installed
// bootstrap kubeconfig: nothing is issued, and the plan stays the same.
func (c *Configurer) credentials(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, info *plan.Info, node *corev1.Node) (*credentials, error) {
	fail := func(err error) (*credentials, error) {
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonCredentialsFailed, err.Error())
		return nil, stepErr(StepCredentials, winnodev1.ReasonCredentialsFailed, err)
	}
	ci, facts, source, err := c.clusterFacts(ctx)
	if err != nil {
		return fail(err)
	}
	cr := &credentials{cluster: facts, source: source}

	installed, haveInstalled := installedKubeconfig(ctx, cl, info)
	if node != nil && haveInstalled {
		cr.cluster.BootstrapKubeconfig = installed
		return cr, nil
	}
	mode, why, err := c.joinMode(ctx)
	if err != nil {
		return fail(err)
	}
	// The node name is fixed before the first credential is issued for it.
	if err := c.fixNodeName(ctx, inst); err != nil {
		return fail(err)
	}
	if mode == bootstrap.ModeServiceAccount {
		err = c.serviceAccountCredentials(ctx, inst, ci, cr, installed, haveInstalled, why)
	} else {
		err = c.tokenCredentials(ctx, inst, ci, cr, installed, haveInstalled, why)
	}
	if err != nil {
		return fail(err)
	}
	return cr, nil
}

// installedKubeconfig is the digest of the bootstrap kubeconfig the
// installed plan put on the host, when the file is still there.
func installedKubeconfig(ctx context.Context, cl *host.Client, info *plan.Info) (plan.FileDigest, bool) {
	if info.InstalledPlan == nil {
		return plan.FileDigest{}, false
	}
	sum, ok := lookupFold(info.InstalledPlan.Files, plan.BootstrapKubeconfigPath)
	if !ok {
		return plan.FileDigest{}, false
	}
	// The agent's info says the file is there and how big it is: a check
	// runs one program over one SSH session, no SFTP.
	if size, ok := lookupFoldSize(info.InstalledPlan.Sizes, plan.BootstrapKubeconfigPath); ok {
		return plan.FileDigest{SHA256: sum, Size: size}, true
	}
	fi, err := cl.Stat(ctx, plan.BootstrapKubeconfigPath)
	if err != nil || !fi.Mode().IsRegular() {
		return plan.FileDigest{}, false
	}
	return plan.FileDigest{SHA256: sum, Size: fi.Size()}, true
}

// joinMode resolves --join-credentials: auto asks the API server, once per
// process (bootstrap.Detector), whether bootstrap tokens authenticate.
// On OpenShift auto needs no probe (which would create a bootstrap token
// Secret): its API server never authenticates bootstrap tokens.
func (c *Configurer) joinMode(ctx context.Context) (bootstrap.Mode, string, error) {
	if c.Detector == nil {
		c.Detector = &bootstrap.Detector{Kube: c.Kube}
	}
	if c.JoinCredentials == "" || c.JoinCredentials == bootstrap.ModeAuto {
		if p, why, err := c.platform(); err == nil && p == platform.OpenShift {
			return c.serviceAccountMode(bootstrap.ModeServiceAccount, "platform openshift ("+why+"): OpenShift's API server does not authenticate bootstrap tokens", nil)
		}
	}
	return c.serviceAccountMode(c.Detector.Resolve(ctx, c.JoinCredentials))
}

// serviceAccountMode checks that the ServiceAccount form has its namespace.
func (c *Configurer) serviceAccountMode(mode bootstrap.Mode, why string, err error) (bootstrap.Mode, string, error) {
	if err == nil && mode == bootstrap.ModeServiceAccount && c.JoinNamespace == "" {
		err = fmt.Errorf("join credentials %s (%s) need the operator's namespace, and none is configured", mode, why)
	}
	return mode, why, err
}

// tokenCredentials puts the instance's bootstrap token into cr, after
// revoking a join ServiceAccount left from the other form. A configuration
// resumed after a crash keeps the kubeconfig already on the host while the
// token in it is the one recorded and valid for TokenMinValid more (the
// operator cannot read a token back: it has no read access to
// kube-system's Secrets).
func (c *Configurer) tokenCredentials(ctx context.Context, inst *winnodev1.WindowsInstance, ci *bootstrap.ClusterInfo, cr *credentials, installed plan.FileDigest, haveInstalled bool, why string) error {
	if err := c.revokeServiceAccount(ctx, inst); err != nil {
		return err
	}
	if err := bootstrap.EnsureRBAC(ctx, c.Kube); err != nil {
		return err
	}
	if inst.Status.BootstrapTokenID != "" && haveInstalled && (c.refreshInstalledToken(ctx, inst, installed) || c.joinKubeconfigCurrent(inst, installed)) {
		cr.cluster.BootstrapKubeconfig = installed
		return nil
	}
	tok, err := c.token(ctx, inst, why)
	if err != nil {
		return err
	}
	cr.bootstrap, err = bootstrap.BootstrapKubeconfig(*ci, *tok)
	if err != nil {
		return err
	}
	cr.cluster.BootstrapKubeconfig = plan.DigestOf(cr.bootstrap)
	inst.Status.JoinKubeconfigSHA256 = cr.cluster.BootstrapKubeconfig.SHA256
	return nil
}

// joinKubeconfigCurrent reports whether the bootstrap kubeconfig installed
// on the host is the one that holds the join credential issued now, valid
// for TokenMinValid more.
func (c *Configurer) joinKubeconfigCurrent(inst *winnodev1.WindowsInstance, installed plan.FileDigest) bool {
	exp := inst.Status.JoinCredentialExpires
	return exp != nil && inst.Status.JoinKubeconfigSHA256 == installed.SHA256 && time.Until(exp.Time) > c.tokenMinValid()
}

// refreshInstalledToken keeps the token of the bootstrap kubeconfig installed on the
// host alive, where tokens are refreshed until the host joins
// (RefreshTokens: Cluster API workload clusters, bootstrap.RefreshToken),
// and records its new expiration; false when the token cannot be refreshed
// (not recorded as the installed one, run out, changed or gone): the host
// then needs a new one.
func (c *Configurer) refreshInstalledToken(ctx context.Context, inst *winnodev1.WindowsInstance, installed plan.FileDigest) bool {
	exp := inst.Status.JoinCredentialExpires
	if !c.RefreshTokens || exp == nil || inst.Status.JoinKubeconfigSHA256 != installed.SHA256 {
		return false
	}
	next, err := bootstrap.RefreshToken(ctx, c.Kube, inst.Name, inst.Status.BootstrapTokenID, exp.Time, c.tokenTTL())
	if err != nil {
		c.Log.Info("the join token could not be refreshed; a new one is issued", "instance", inst.Name, "reason", err.Error())
		return false
	}
	if next.Equal(exp.Time) {
		return true
	}
	was := *exp
	inst.Status.JoinCredentialExpires = &metav1.Time{Time: next}
	if err := c.save(ctx, inst); err != nil {
		// The Secret says next, the status still was: the next refresh
		// fails its precondition and a new token is issued.
		inst.Status.JoinCredentialExpires = &was
		return false
	}
	return true
}

// token issues the instance's bootstrap token, revoking the one recorded
// before. The new token's ID and expiry are recorded before its Secret is
// created, so a crash at any point leaves no token the status does not
// name, and the operator never needs to list or read kube-system's
// Secrets: it deletes a token by the name its ID gives. A token ID that is
// taken already (another token's Secret) is given up without deleting
// anything.
func (c *Configurer) token(ctx context.Context, inst *winnodev1.WindowsInstance, why string) (*bootstrap.Token, error) {
	if err := c.revokeBootstrapToken(ctx, inst); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		tok, err := bootstrap.NewToken(inst.Name, c.TokenTTL)
		if err != nil {
			return nil, err
		}
		exp := metav1.NewTime(tok.Expiration)
		inst.Status.BootstrapTokenID, inst.Status.JoinCredentialExpires, inst.Status.JoinKubeconfigSHA256 = tok.ID, &exp, ""
		if err := c.save(ctx, inst); err != nil {
			inst.Status.BootstrapTokenID, inst.Status.JoinCredentialExpires = "", nil
			return nil, err
		}
		err = bootstrap.StoreToken(ctx, c.Kube, tok)
		if apierrors.IsAlreadyExists(errors.Unwrap(err)) && attempt < 3 {
			inst.Status.BootstrapTokenID, inst.Status.JoinCredentialExpires = "", nil
			continue
		}
		if err != nil {
			return nil, err
		}
		c.event(inst, corev1.EventTypeNormal, "JoinCredentials", "issued %s (expires %s) for the kubelet to join: %s", tok, tok.Expiration.Format(time.RFC3339), why)
		return tok, nil
	}
}

// serviceAccountCredentials puts a token of the instance's join
// ServiceAccount into cr (serviceaccount.go in internal/bootstrap), after
// revoking a bootstrap token left from the other form. A configuration
// resumed after a crash keeps the kubeconfig already on the host while its
// token is valid for TokenMinValid more (a token cannot be read back, only
// reissued).
func (c *Configurer) serviceAccountCredentials(ctx context.Context, inst *winnodev1.WindowsInstance, ci *bootstrap.ClusterInfo, cr *credentials, installed plan.FileDigest, haveInstalled bool, why string) error {
	if err := c.revokeBootstrapToken(ctx, inst); err != nil {
		return err
	}
	name := bootstrap.ServiceAccountName(inst.Name)
	if haveInstalled && inst.Status.JoinServiceAccount == name {
		current, err := bootstrap.ServiceAccountKubeconfigCurrent(ctx, c.Kube, c.JoinNamespace, inst.Name, installed.SHA256, c.tokenMinValid())
		if err != nil {
			return err
		}
		if current {
			cr.cluster.BootstrapKubeconfig = installed
			return nil
		}
	}
	// Recorded before the ServiceAccount exists, so that a crash leaves
	// nothing the status does not name.
	inst.Status.JoinServiceAccount = name
	if err := c.save(ctx, inst); err != nil {
		return err
	}
	tok, err := bootstrap.CreateServiceAccountToken(ctx, c.Kube, c.JoinNamespace, inst.Name, c.TokenTTL)
	if err != nil {
		return err
	}
	exp := metav1.NewTime(tok.Expiration)
	inst.Status.JoinCredentialExpires = &exp
	if cr.bootstrap, err = bootstrap.ServiceAccountKubeconfig(*ci, *tok); err != nil {
		return err
	}
	cr.cluster.BootstrapKubeconfig = plan.DigestOf(cr.bootstrap)
	if err := bootstrap.RecordServiceAccountKubeconfig(ctx, c.Kube, tok, cr.cluster.BootstrapKubeconfig.SHA256); err != nil {
		return err
	}
	c.event(inst, corev1.EventTypeNormal, "JoinCredentials", "issued a %s (expires %s) for the kubelet to join: %s", tok, tok.Expiration.Format(time.RFC3339), why)
	return nil
}

// revokeTokens revokes the instance's join credentials of both forms: its
// bootstrap token and its join ServiceAccount.
func (c *Configurer) revokeTokens(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	if err := c.revokeBootstrapToken(ctx, inst); err != nil {
		return err
	}
	return c.revokeServiceAccount(ctx, inst)
}

func (c *Configurer) revokeBootstrapToken(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	if id := inst.Status.BootstrapTokenID; id != "" {
		if err := bootstrap.RevokeInstanceToken(ctx, c.Kube, inst.Name, id); err != nil {
			return err
		}
	}
	inst.Status.BootstrapTokenID = ""
	if inst.Status.JoinServiceAccount == "" {
		inst.Status.JoinCredentialExpires, inst.Status.JoinKubeconfigSHA256 = nil, ""
	}
	return nil
}

func (c *Configurer) revokeServiceAccount(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	// Tried even when the status names none: winnodectl remove works from
	// the Node alone, and deleteIfOurs leaves alone what is not winnode's.
	if c.JoinNamespace != "" {
		if err := bootstrap.RevokeServiceAccount(ctx, c.Kube, c.JoinNamespace, inst.Name); err != nil {
			return err
		}
	}
	inst.Status.JoinServiceAccount = ""
	if inst.Status.BootstrapTokenID == "" {
		inst.Status.JoinCredentialExpires, inst.Status.JoinKubeconfigSHA256 = nil, ""
	}
	return nil
}

// expireJoinCredentials revokes the join credential of an instance that is
// still not Ready when it expires (a bootstrap token, which the token
// cleaner would delete too, or a join ServiceAccount, which nothing else
// would): the next attempt issues a new one. It needs no SSH.
func (c *Configurer) expireJoinCredentials(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	exp := inst.Status.JoinCredentialExpires
	if exp == nil || time.Now().Before(exp.Time) {
		return nil
	}
	if err := c.revokeTokens(ctx, inst); err != nil {
		return err
	}
	inst.Status.JoinCredentialExpires, inst.Status.JoinKubeconfigSHA256 = nil, ""
	c.event(inst, corev1.EventTypeNormal, "JoinCredentialsExpired", "the join credential of host %s expired at %s before its Node was Ready: revoked; the next attempt issues a new one",
		inst.Spec.Address, exp.Format(time.RFC3339))
	return c.save(ctx, inst)
}

// untilCredentialsExpire makes a Result that would wait for nothing wait
// until the join credential issued now expires, so that it is revoked then
// (expireJoinCredentials) even for an instance nothing else wakes.
func untilCredentialsExpire(inst *winnodev1.WindowsInstance, res Result) Result {
	if exp := inst.Status.JoinCredentialExpires; exp != nil && res.RequeueAfter == 0 {
		res.RequeueAfter = max(time.Until(exp.Time), 0) + time.Second
	}
	return res
}

// lookupFoldSize is lookupFold for the sizes of InstalledPlan.
func lookupFoldSize(m map[string]int64, key string) (int64, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return 0, false
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
