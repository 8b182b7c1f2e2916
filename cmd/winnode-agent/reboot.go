package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
)

// rebootCommand is `winnode-agent reboot --reason TEXT`: the restart an
// apply asked for (RebootRequired), a few seconds after the answer.
func rebootCommand(ctx context.Context, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "reboot --reason TEXT",
		Short: "Restart this host a few seconds from now (what an apply that ended with RebootRequired needs), and print the result as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				res, err := a.Reboot(ctx, reason)
				return res, res, err
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "a Windows feature needs a restart", "why, recorded in Windows' event log")
	return cmd
}
