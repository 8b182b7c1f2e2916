package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
)

// joinCommand is `winnode-agent join`: Pull mode, run by the bootstrap
// data under cloudbase-init (internal/agent Join).
func joinCommand(ctx context.Context, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var o agent.JoinOptions
	cmd := &cobra.Command{
		Use:   `join [--config C:\k\join.json] [--timeout 1h]`,
		Short: "Make this host a node by itself: render the plan from the image's payload and the join config, apply it, and join (Pull mode)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				doc, err := a.Join(ctx, o)
				var partial *plan.Result
				if doc != nil && len(doc.Results) > 0 {
					partial = doc.Results[len(doc.Results)-1]
				}
				return doc, partial, err
			})
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ConfigFile, "config", joinconfig.Path, "the join config the bootstrap data wrote (a host path)")
	f.StringVar(&o.ManifestFile, "manifest", joinconfig.ImageManifestPath, "the payload manifest the Windows image carries (a host path)")
	f.DurationVar(&o.Timeout, "timeout", 0, "how long to wait for the Node and its pod subnet (default 1h)")
	return cmd
}
