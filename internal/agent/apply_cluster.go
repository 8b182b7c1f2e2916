package agent

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// noticeClusterChange handles a host listed in another cluster: what its
// kubelet wrote when it joined the old cluster (kubeconfig, certificates)
// would keep it there. Every service that exists is stopped, to restart
// without it, and dropOldCredentials deletes it meanwhile.
func (r *applyRun) noticeClusterChange(context.Context) error {
	applied := r.st.Applied
	r.otherCluster = applied != nil && applied.Cluster != "" && r.plan.Cluster != "" && applied.Cluster != r.plan.Cluster
	if !r.otherCluster {
		return nil
	}
	r.a.Log.Info("the host joins another cluster: dropping the old cluster's credentials", "from", applied.Cluster, "to", r.plan.Cluster)
	r.toStop = r.toStop[:0]
	for _, name := range r.order {
		d := r.decisions[lower(name)]
		if d.action == plan.ServiceCreated {
			continue
		}
		d.why = strings.TrimPrefix(d.why+"; the cluster changed", "; ")
		r.decisions[lower(name)] = d
		r.toStop = append(r.toStop, name)
	}
	return nil
}

// dropOldCredentials deletes the plan's clusterCredentials when the host
// changes cluster; the services that used them are stopped by now.
func (r *applyRun) dropOldCredentials(context.Context) error {
	if !r.otherCluster {
		return nil
	}
	for _, c := range r.plan.ClusterCredentials {
		local, err := r.a.localPath(c)
		if err != nil {
			return err
		}
		if err := r.a.retryFile(func() error { return os.RemoveAll(local) }); err != nil {
			return &plan.Error{Code: plan.ErrFileInstall, File: c, Message: fmt.Sprintf("deleting the old cluster's credentials: %v", err)}
		}
	}
	return nil
}
