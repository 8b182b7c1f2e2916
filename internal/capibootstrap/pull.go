package capibootstrap

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/workload"
)

// Pull is what the provider needs for Pull mode, from the operator's
// options.
type Pull struct {
	// Version is the operator's version: the join config names it and the
	// agent versions it supports (joinconfig.SupportedAgents).
	Version string
	// Network is the pod network mode (--network: auto, flannel,
	// external), decided per workload cluster as for Push hosts.
	Network string
	// JoinTimeout is how long a Machine whose data is written may go
	// without a nodeRef before condition NodeJoined says it timed out
	// (DefaultJoinTimeout when 0).
	JoinTimeout time.Duration
	// TokenTTL is the bootstrap tokens' lifetime
	// (bootstrap.ClusterAPITokenTTL when 0).
	TokenTTL time.Duration
}

// DefaultJoinTimeout is Pull.JoinTimeout's default: a Windows host boots,
// renames itself, reboots and joins within it on every provider we know
// of; Cluster API's own default for a Machine's node startup
// (MachineHealthCheck nodeStartupTimeout) is 10 minutes for Linux, and
// Windows images boot slower.
const DefaultJoinTimeout = 30 * time.Minute

func (p Pull) tokenTTL() time.Duration {
	if p.TokenTTL > 0 {
		return p.TokenTTL
	}
	return bootstrap.ClusterAPITokenTTL
}

func (p Pull) joinTimeout() time.Duration {
	if p.JoinTimeout > 0 {
		return p.JoinTimeout
	}
	return DefaultJoinTimeout
}

// tokenOwner labels the bootstrap token of cfg in the workload cluster
// (label winnode.io/instance, as a WindowsInstance's token): its namespace
// and name, within a label value's 63 characters.
func tokenOwner(cfg *bootstrapv1.WinnodeConfig) string {
	return winnodev1.LabelValue(cfg.Namespace + "." + cfg.Name)
}

// pullData renders the Pull bootstrap data of cfg's Machine: the workload
// cluster's facts and a new bootstrap token there, recorded in cfg's
// status before it exists (so that it is found and deleted whatever
// happens next). A *blocked says why no data can be written now.
func (r *Reconciler) pullData(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, orig **bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, name string, wc *workload.Cluster) ([]byte, *blocked, error) {
	mode, why, err := wc.Detector.Resolve(ctx, bootstrap.ModeAuto)
	if err != nil {
		return nil, nil, fmt.Errorf("WinnodeConfig %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	if mode != bootstrap.ModeBootstrapToken {
		return nil, &blocked{bootstrapv1.ReasonBootstrapTokenAuthUnavailable, fmt.Sprintf(
			"Pull mode needs bootstrap-token authentication in the workload cluster of Cluster %s, and %s; turn it on there (kube-apiserver --enable-bootstrap-token-auth, as kubeadm does) or set spec.mode: Push", wc.Ref, why)}, nil
	}
	c := &configure.Configurer{Kube: wc.Kube, Network: r.Pull.Network, ServiceCIDR: wc.Facts.ServiceCIDR(), APIServer: wc.Facts.APIServer,
		Platform: platform.Kubernetes, PlatformReason: "a Cluster API workload cluster"}
	cluster, network, _, err := c.JoinFacts(ctx)
	if err != nil {
		return nil, &blocked{bootstrapv1.ReasonClusterFactsUnavailable, fmt.Sprintf("reading the facts a Pull host needs in the workload cluster of Cluster %s: %v", wc.Ref, err)}, nil
	}
	tok, err := r.issueToken(ctx, cfg, orig, wc)
	if err != nil {
		return nil, nil, err
	}
	join := &joinconfig.Config{
		SchemaVersion: joinconfig.SchemaVersion, OperatorVersion: r.Pull.Version, AgentVersions: joinconfig.SupportedAgents(r.Pull.Version),
		Machine: cfg.Namespace + "/" + machine.Name, NodeName: plan.NodeName(name),
		Cluster: joinconfig.Cluster{Server: cluster.Server, CAData: cluster.CAData, ClusterDNS: cluster.ClusterDNS,
			ClusterDomain: cluster.ClusterDomain, CloudProvider: cluster.CloudProvider},
		Network:        joinconfig.FromFacts(network),
		BootstrapToken: joinconfig.Secret(tok.Value()),
	}
	data, err := PullBootstrapData(PullInput{Namespace: cfg.Namespace, Machine: machine.Name, ComputerName: name,
		Firewall: firewallRules(cfg.Spec.FirewallPorts), Join: join})
	if err != nil {
		return nil, &blocked{bootstrapv1.ReasonClusterFactsUnavailable, err.Error()}, nil
	}
	return data, nil, nil
}

// issueToken makes a new bootstrap token for cfg in the workload cluster,
// valid for the provider's TTL: an earlier one that no written data holds
// is deleted first (its secret half is known nowhere any more). The new
// one's ID and expiry are written to cfg's status, and TokenFinalizer put
// on cfg (release.go), before its Secret is created.
func (r *Reconciler) issueToken(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, orig **bootstrapv1.WinnodeConfig, wc *workload.Cluster) (*bootstrap.Token, error) {
	if err := r.holdToken(ctx, cfg, orig); err != nil {
		return nil, err
	}
	owner := tokenOwner(cfg)
	if old := cfg.Status.BootstrapToken; old != nil {
		if err := bootstrap.RevokeInstanceToken(ctx, wc.Kube, owner, old.ID); err != nil {
			return nil, err
		}
	}
	tok, err := bootstrap.NewToken(owner, r.Pull.tokenTTL())
	if err != nil {
		return nil, err
	}
	cfg.Status.BootstrapToken = &bootstrapv1.BootstrapTokenStatus{ID: tok.ID, Expires: metav1.NewTime(tok.Expiration)}
	if err := r.patchStatus(ctx, *orig, cfg); err != nil {
		return nil, err
	}
	*orig = cfg.DeepCopy()
	if err := bootstrap.StoreToken(ctx, wc.Kube, tok); err != nil {
		return nil, fmt.Errorf("WinnodeConfig %s/%s, in the workload cluster of Cluster %s: %w", cfg.Namespace, cfg.Name, wc.Ref, err)
	}
	return tok, nil
}
