package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
)

// podNetworkCommand is `winnode-agent pod-network`: run by kube-proxy's
// service before kube-proxy, it waits for the Node's pod subnet and writes
// what depends on it (internal/agent PodNetwork).
func podNetworkCommand(ctx context.Context, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var o agent.PodNetworkOptions
	cmd := &cobra.Command{
		Use:   plan.PodNetworkCommand + ` [--config C:\k\pod-network.json] [--wait-only]`,
		Short: "Wait for this node's pod subnet and write the CNI configuration and kube-proxy's configuration for it (run by kube-proxy's service when it starts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				doc, err := a.PodNetwork(ctx, o)
				return doc, nil, err
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&o.ConfigFile, "config", plan.PodNetworkPath, "the pod network's settings the plan installed (a host path)")
	cmd.Flags().BoolVar(&o.WaitOnly, plan.PodNetworkWaitOnly, false, "wait for the subnet and write nothing (run before flanneld)")
	return cmd
}
