// Command winnode-agent is the program the winnode operator runs on each
// Windows host over SSH: it applies a plan, removes what it installed,
// reports host facts and bootstraps a kubelet from worker Ignition; in
// Cluster API's Pull mode, the bootstrap data runs it to join the host by
// itself (join). Every
// command prints one JSON document on stdout and logs on stderr; see
// internal/agent for what each does.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Every run's lines go to stderr (the operator reads them) and to the
	// agent's own log on the host, C:\var\log\winnode-agent, once the run
	// may write there (agent.OwnLog).
	ownLog := &agent.OwnLog{}
	defer ownLog.Close()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(stderr, ownLog), nil))
	var startTimeout, stopTimeout time.Duration
	code := agent.ExitOK

	// withAgent opens the platform, runs the command and prints its
	// document or error.
	withAgent := func(do func(a *agent.Agent) (any, *plan.Result, error)) {
		p, err := agent.Open()
		if err != nil {
			code = agent.Fail(stdout, plan.AsError(err, plan.ErrHost), nil)
			return
		}
		defer p.Close()
		a := &agent.Agent{Platform: p, Log: log, OwnLog: ownLog, Version: version, StartTimeout: startTimeout, StopTimeout: stopTimeout}
		doc, partial, err := do(a)
		if err != nil {
			log.Error("failed", "err", err)
			code = agent.Fail(stdout, err, partial)
			return
		}
		agent.WriteJSON(stdout, doc)
	}

	root := &cobra.Command{
		Use:           "winnode-agent",
		Short:         "Configures this Windows host as a Kubernetes worker node (run by the winnode operator)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().DurationVar(&startTimeout, "start-timeout", 2*time.Minute, "how long to wait for each service to reach Running")
	root.PersistentFlags().DurationVar(&stopTimeout, "stop-timeout", time.Minute, "how long to wait for each service to stop")

	root.AddCommand(infoCommand(ctx, stdin, withAgent))
	root.AddCommand(installCommand(ctx, stdin, withAgent))

	var planFile string
	applyCmd := &cobra.Command{
		Use:   "apply --plan FILE",
		Short: "Make this host match a plan (idempotent) and print the result as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				res, err := a.ApplyFile(ctx, planFile, stdin)
				return res, res, err
			})
			return nil
		},
	}
	applyCmd.Flags().StringVar(&planFile, "plan", "", `the plan: a host path (C:\k\plan.json) or - for standard input`)
	applyCmd.MarkFlagRequired("plan")
	root.AddCommand(applyCmd)

	var purgeLogs bool
	removeCmd := &cobra.Command{
		Use:   "remove [--purge-logs]",
		Short: "Stop and delete every service and file winnode installed (logs are kept)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				res, err := a.Remove(ctx, purgeLogs)
				return res, res, err
			})
			return nil
		},
	}
	removeCmd.Flags().BoolVar(&purgeLogs, "purge-logs", false, "delete the log folders too")
	root.AddCommand(removeCmd)

	root.AddCommand(receiveCommand(ctx, stdin, withAgent))
	root.AddCommand(bootstrapCommand(ctx, stdin, withAgent))
	root.AddCommand(logsCommand(ctx, withAgent))
	root.AddCommand(joinCommand(ctx, withAgent))
	root.AddCommand(podNetworkCommand(ctx, withAgent))
	root.AddCommand(waitCertificateCommand(ctx, withAgent))
	root.AddCommand(rebootCommand(ctx, withAgent))

	root.AddCommand(versionCommand(stdout))

	root.SetArgs(args)
	root.SetOut(stderr) // help and usage go to stderr: stdout is for the JSON document
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return agent.Fail(stdout, plan.Errorf(plan.ErrUsage, "%v (run winnode-agent --help)", err), nil)
	}
	return code
}

// receiveCommand is `winnode-agent receive --staging DIR`: the blobs the
// operator streams on standard input, staged (Agent.Receive).
func receiveCommand(ctx context.Context, stdin io.Reader, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var staging string
	cmd := &cobra.Command{
		Use:   "receive --staging DIR",
		Short: "Stage the blobs streamed on standard input, decoding and hashing them as they arrive, and print what was staged as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				res, err := a.Receive(ctx, staging, stdin)
				return res, nil, err
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&staging, "staging", "", `the staging folder (C:\k\staging)`)
	cmd.MarkFlagRequired("staging")
	return cmd
}

// infoCommand is `winnode-agent info`: the host's facts and the installed
// plan's manifest (Agent.Info).
func infoCommand(ctx context.Context, stdin io.Reader, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var withPreflight bool
	cmd := &cobra.Command{
		Use:   "info [--preflight]",
		Short: "Print host facts and the installed plan's manifest as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				if err := readPreflight(a, withPreflight, stdin); err != nil {
					return nil, nil, err
				}
				info, err := a.Info(ctx)
				return info, nil, err
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&withPreflight, "preflight", false, "run the pre-flight checks too, with the request (JSON) read from standard input")
	return cmd
}

// readPreflight reads the pre-flight request from stdin when asked to.
func readPreflight(a *agent.Agent, asked bool, stdin io.Reader) error {
	if !asked {
		return nil
	}
	req, err := agent.ReadPreflightRequest(stdin)
	if err != nil {
		return err
	}
	a.Preflight = req
	return nil
}

// installCommand is `winnode-agent install --to PATH`: the agent's first
// run on a host, from a folder only administrators write (Agent.InstallSelf).
func installCommand(ctx context.Context, stdin io.Reader, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var to string
	var withPreflight bool
	cmd := &cobra.Command{
		Use:   "install --to PATH",
		Short: "Secure winnode's folders, copy this program to PATH in them, and print host facts as info does (the first run, from a folder only administrators write)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				if err := readPreflight(a, withPreflight, stdin); err != nil {
					return nil, nil, err
				}
				info, err := a.InstallSelf(ctx, to)
				return info, nil, err
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", `where the agent is kept: C:\k\winnode-agent.exe`)
	cmd.Flags().BoolVar(&withPreflight, "preflight", false, "run the pre-flight checks too, as info --preflight does")
	cmd.MarkFlagRequired("to")
	return cmd
}

// versionCommand is `winnode-agent version`: the agent's and the plan
// schema's versions as JSON.
func versionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the agent's version as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			agent.WriteJSON(stdout, map[string]string{"schemaVersion": plan.SchemaVersion, "agentVersion": version})
			return nil
		},
	}
}

// logsCommand is `winnode-agent logs --service NAME`: the end of a
// service's log, read on the host (Agent.Logs), for a node whose kubelet
// cannot serve it. It changes nothing.
func logsCommand(ctx context.Context, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var o agent.LogsOptions
	cmd := &cobra.Command{
		Use:   "logs --service NAME [--since DURATION] [--tail N] [--from BYTE]",
		Short: "Print the end of a service's log (C:\\var\\log\\<service>\\<service>.log; winnode-agent: this program's own) as JSON; changes nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				doc, err := a.Logs(ctx, o)
				return doc, nil, err
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Service, "service", "", "the service (kubelet, kube-proxy, flanneld, csi-proxy, windows_exporter, hybrid-overlay-node, ...), or winnode-agent")
	cmd.Flags().DurationVar(&o.Since, "since", 0, "only lines from this long ago on (0: all)")
	cmd.Flags().IntVar(&o.Tail, "tail", -1, "only the last N lines (-1: all)")
	cmd.Flags().Int64Var(&o.From, "from", 0, "start at this byte of the file (a follower's last size; from 0 when the file is smaller: rotated)")
	cmd.MarkFlagRequired("service")
	return cmd
}
