package configure

import (
	"context"

	"github.com/winnode/winnode/internal/plan"
)

// JoinFacts are what a host joining c's cluster by itself needs to know of
// it before it has a Node (Cluster API's Pull mode, internal/capibootstrap):
// the cluster facts (API server, CA, cluster DNS) and the pod network's,
// gathered exactly as for a host the operator configures over SSH
// (clusterFacts, networkFacts), and where they came from. The bootstrap
// kubeconfig is not among them: the host makes it from its join config.
func (c *Configurer) JoinFacts(ctx context.Context) (plan.ClusterFacts, plan.NetworkFacts, string, error) {
	_, cluster, where, err := c.clusterFacts(ctx)
	if err != nil {
		return plan.ClusterFacts{}, plan.NetworkFacts{}, "", err
	}
	network, why, err := c.networkFacts(ctx, nil)
	if err != nil {
		return plan.ClusterFacts{}, plan.NetworkFacts{}, "", err
	}
	return cluster, network, where + "; pod network " + network.Mode + ": " + why, nil
}
