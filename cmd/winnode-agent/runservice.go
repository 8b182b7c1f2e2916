package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
)

const runServiceUsage = `run-service --name NAME [--log-file FILE] [--dry-run] -- PROGRAM [ARGS...]

Run PROGRAM as the Windows service NAME: this process answers Windows'
service manager and runs PROGRAM as its child, its output appended to FILE
(for programs that cannot answer the service manager themselves, or must
not: kubelet, kube-proxy, flanneld).

  --name NAME       the service's name
  --log-file FILE   append the program's output to this file
  --dry-run         check the command line and print the service's name, log
                    file, program and arguments as JSON; run nothing
`

// runServiceCommand is `winnode-agent run-service`: the agent as the
// Windows service of a program that cannot be one, or that must not answer
// the service manager itself (agent.RunService). Its arguments are parsed
// by agent.ParseRunService, the parser the agent's info uses on the plans'
// command lines too. With --dry-run it only checks its command line and
// prints what it would run as JSON: the Wine tier checks the plans'
// run-service command lines so.
func runServiceCommand(ctx context.Context, stdout, stderr io.Writer, code *int) *cobra.Command {
	return &cobra.Command{
		Use:                "run-service --name NAME [--log-file FILE] [--dry-run] -- PROGRAM [ARGS...]",
		Short:              "Run PROGRAM as the Windows service NAME, its output appended to FILE (for programs that cannot answer the service manager themselves: kubelet, kube-proxy, flanneld)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, dryRun, err := agent.ParseRunService(args)
			if errors.Is(err, pflag.ErrHelp) {
				fmt.Fprint(stderr, runServiceUsage)
				return nil
			}
			if err != nil {
				*code = agent.Fail(stdout, plan.Errorf(plan.ErrUsage, "%v (run winnode-agent run-service --help)", err), nil)
				return nil
			}
			if dryRun {
				agent.WriteJSON(stdout, r)
				return nil
			}
			*code = r.Run(ctx)
			return nil
		},
	}
}
