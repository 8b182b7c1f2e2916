package capibootstrap

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/plan"
)

// PullMachines gives the CSR approver of each workload cluster
// (internal/controller/csr) the Machines in Pull mode joining it: those of
// the Cluster's namespace and name whose WinnodeConfig has a computer
// name, each as csrapproval.PullMachine sees it. Everything comes from the
// management cluster: the config's status (its node name and token ID,
// which only the operator writes) and the Machine (its addresses, which
// its infrastructure provider reports, its deletion, its nodeRef).
type PullMachines struct {
	// Configs reads WinnodeConfigs (the manager's cache); Machines reads
	// Machines (the API server: the provider does not watch them).
	Configs, Machines client.Reader
}

// Instances implements csr.PullMachines.
func (p *PullMachines) Instances(ctx context.Context, cluster winnodev1.ClusterRef) ([]winnodev1.WindowsInstance, error) {
	var list bootstrapv1.WinnodeConfigList
	if err := p.Configs.List(ctx, &list, client.InNamespace(cluster.Namespace)); err != nil {
		return nil, err
	}
	var out []winnodev1.WindowsInstance
	for i := range list.Items {
		cfg := &list.Items[i]
		machine := owningMachineName(cfg)
		if ModeOfConfig(cfg) != bootstrapv1.ModePull || cfg.Status.ComputerName == "" || machine == "" {
			continue
		}
		var m clusterv1.Machine
		err := p.Machines.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: machine}, &m)
		if apierrors.IsNotFound(err) {
			continue // no Machine, no node
		}
		if err != nil {
			return nil, fmt.Errorf("reading Machine %s/%s: %w", cfg.Namespace, machine, err)
		}
		if m.Spec.ClusterName != cluster.Name {
			continue
		}
		out = append(out, pullMachine(cfg, &m, cluster).Instance())
	}
	return out, nil
}

// pullMachine is what the approver knows of Machine m in Pull mode.
func pullMachine(cfg *bootstrapv1.WinnodeConfig, m *clusterv1.Machine, cluster winnodev1.ClusterRef) csrapproval.PullMachine {
	pm := csrapproval.PullMachine{
		Config: cfg.Namespace + "/" + cfg.Name, Machine: m.Name, Cluster: cluster, NodeName: plan.NodeName(cfg.Status.ComputerName),
		Created: cfg.CreationTimestamp, Deleting: !m.DeletionTimestamp.IsZero(), Joined: m.Status.NodeRef.IsDefined(),
	}
	if cfg.Status.BootstrapToken != nil {
		pm.BootstrapTokenID = cfg.Status.BootstrapToken.ID
	}
	for _, a := range m.Status.Addresses {
		if a.Type == clusterv1.MachineInternalIP {
			pm.Addresses = append(pm.Addresses, a.Address)
		}
	}
	for _, a := range m.Status.Addresses {
		if a.Type == clusterv1.MachineExternalIP {
			pm.Addresses = append(pm.Addresses, a.Address)
		}
	}
	return pm
}
