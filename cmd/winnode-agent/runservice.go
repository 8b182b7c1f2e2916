package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
)

// runServiceCommand is `winnode-agent run-service`: the agent as the
// Windows service of a program that cannot be one (agent.RunService).
func runServiceCommand(ctx context.Context, code *int) *cobra.Command {
	var r agent.RunService
	cmd := &cobra.Command{
		Use:   "run-service --name NAME [--log-file FILE] -- PROGRAM [ARGS...]",
		Short: "Run PROGRAM as the Windows service NAME (for programs that cannot run as a service themselves, such as flanneld)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.Program, r.Args = args[0], args[1:]
			*code = r.Run(ctx)
			return nil
		},
	}
	cmd.Flags().StringVar(&r.Name, "name", "", "the service's name")
	cmd.Flags().StringVar(&r.LogFile, "log-file", "", "append the program's output to this file")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}
