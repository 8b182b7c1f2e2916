package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
)

// runServiceCommand is `winnode-agent run-service`: the agent as the
// Windows service of a program that cannot be one, or that must not answer
// the service manager itself (agent.RunService). With --dry-run it only
// parses its command line and prints what it would run as JSON: the Wine
// tier checks the plans' run-service command lines so, with this parser.
func runServiceCommand(ctx context.Context, stdout io.Writer, code *int) *cobra.Command {
	var r agent.RunService
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "run-service --name NAME [--log-file FILE] [--dry-run] -- PROGRAM [ARGS...]",
		Short: "Run PROGRAM as the Windows service NAME, its output appended to FILE (for programs that cannot answer the service manager themselves: kubelet, kube-proxy, flanneld)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.Program, r.Args = args[0], args[1:]
			if dryRun {
				if err := r.Check(); err != nil {
					*code = agent.Fail(stdout, plan.AsError(err, plan.ErrUsage), nil)
					return nil
				}
				agent.WriteJSON(stdout, r)
				return nil
			}
			*code = r.Run(ctx)
			return nil
		},
	}
	cmd.Flags().StringVar(&r.Name, "name", "", "the service's name")
	cmd.Flags().StringVar(&r.LogFile, "log-file", "", "append the program's output to this file")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check the command line and print the service's name, log file, program and arguments as JSON; run nothing")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}
