// Package cli holds winnodectl's commands, one file per command: add.go
// and remove.go (one host without the operator; approve.go approves its
// kubelet's CSRs; upgrade.go is add for a host that is a node already),
// status.go, userdata.go and ssh.go. root.go wires them and defines the
// exit codes; kube.go and output.go are the shared flags; steps.go prints
// add's and remove's steps, and package view (cli/view) the status tables
// and the hosts' progress.
//
// The commands reuse the operator's packages (internal/configure, the
// engine that configures a host; internal/inventory, internal/csrapproval,
// internal/sshkey, internal/bootstrap, internal/host) rather than
// implementing anything a second time; what is here is flags, output and the
// wiring between them. The demo is a command of its own package
// (internal/demo), which cmd/winnodectl adds to these: it alone links the
// operator's controllers, the simulator and the test control plane.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Exit codes of winnodectl (docs/cli.md lists them for users).
const (
	// ExitOK: the command did what was asked (the demo: stopped cleanly
	// after SIGINT or SIGTERM).
	ExitOK = 0
	// ExitFailed: the command failed; the message on stderr says what
	// failed and what to do.
	ExitFailed = 1
	// ExitUsage: wrong flags or arguments; nothing was done.
	ExitUsage = 2
	// ExitTimeout: a wait ran out of time (add: the node did not become
	// Ready; demo: the hosts did not all become Ready).
	ExitTimeout = 3
	// ExitInterrupted: SIGINT or SIGTERM stopped add or remove before it
	// finished; running it again continues where it stopped.
	ExitInterrupted = 130
	// ExitSSHFailed: `winnodectl ssh` could not open the session (as
	// OpenSSH's ssh does); otherwise ssh exits with the remote command's
	// status.
	ExitSSHFailed = 255
)

// Streams are where a command reads and writes.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// StdStreams are the process's stdin, stdout and stderr.
func StdStreams() Streams { return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// exitError carries the exit code a failure should end the process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// WithCode marks err to end the process with code.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// UsageErrorf is a mistake in the flags or arguments.
func UsageErrorf(format string, args ...any) error {
	return WithCode(ExitUsage, fmt.Errorf(format, args...))
}

// silentExit ends the process with code and prints nothing more (the
// command has already said what happened, or the code is the remote
// program's own).
type silentExit int

func (s silentExit) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// Execute runs winnodectl with args and returns the process's exit code;
// more are commands defined outside this package (cmd/winnodectl adds the
// demo's). SIGINT and SIGTERM cancel the command's context; every command
// stops what it started before returning.
func Execute(ctx context.Context, args []string, s Streams, more ...*cobra.Command) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := NewCommand(s, more...)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var silent silentExit
	if errors.As(err, &silent) {
		return int(silent)
	}
	fmt.Fprintf(s.Err, "winnodectl: %v\n", err)
	var coded *exitError
	switch {
	case errors.As(err, &coded):
		return coded.code
	case ctx.Err() != nil:
		return ExitInterrupted
	default:
		return ExitFailed
	}
}

// NewCommand builds the winnodectl command tree writing to s, with the
// commands of this package and more.
func NewCommand(s Streams, more ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "winnodectl",
		Short: "Turn Windows Server hosts into Kubernetes worker nodes",
		Long: `winnodectl is winnode's command line: try it all on simulated Windows hosts
(demo), add or remove one host without the operator, see where every Windows
host is (status), print the user data that prepares a host (userdata), write
what a Windows image bakes in for Cluster API's Pull mode (image), and open
an SSH session to a host with the operator's key (ssh).

Exit codes: 0 success; 1 the command failed (the message says what to do);
2 wrong flags or arguments; 3 a wait ran out of time; 130 interrupted
(SIGINT or SIGTERM) before finishing; ssh: the remote command's status, or
255 when the session could not be opened.`,
		Example: `  # Everything on this machine: a control plane, 3 simulated Windows hosts, the operator
  winnodectl demo

  # Where is every Windows host?
  winnodectl status

  # Join one host without the operator
  winnodectl add 10.0.0.7 --user Administrator --ssh-key ~/.ssh/winnode`,
		Version:           Version,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		// Without a command: the help. With an unknown one: a usage error
		// (cobra's own "unknown command" error carries no exit code).
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageErrorf("unknown command %q for winnodectl; see winnodectl --help", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		// controller-runtime complains on stderr when nobody gave it a
		// logger; the demo gives it the operator's log file, every other
		// command has nothing of its to show.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Name() != "demo" {
				ctrllog.SetLogger(logr.Discard())
			}
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return WithCode(ExitUsage, err)
	})
	root.AddCommand(
		newAddCommand(s),
		newRemoveCommand(s),
		newUpgradeCommand(s),
		newStatusCommand(s),
		newUserDataCommand(s),
		newImageCommand(s),
		newSSHCommand(s),
		newLogsCommand(s),
		newGatherCommand(s),
		newCheckCommand(s),
	)
	root.AddCommand(more...)
	return root
}

// exactArgs is cobra.ExactArgs with a usage exit code and the names of the
// expected arguments in the message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return UsageErrorf("%s takes %d argument(s) (%v), got %d; see %s --help", cmd.CommandPath(), len(names), names, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// NoArgs is cobra.NoArgs with a usage exit code.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageErrorf("%s takes no arguments, got %q; see %s --help", cmd.CommandPath(), args, cmd.CommandPath())
	}
	return nil
}
