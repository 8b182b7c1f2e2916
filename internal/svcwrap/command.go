// Package svcwrap is winnode-service.exe (cmd/winnode-service): the process
// Windows' service manager starts for a service whose program cannot, or
// must not, answer it itself. It answers the service manager, runs the
// program as its child, writes the program's output to the service's log
// file, rotated at the administrator's limits (internal/logrotate), stops
// the program when the service is stopped, and exits with the program's
// code when it ends on its own, so that the service's recovery actions
// restart it. internal/plan's wrapped.go says which services it hosts and
// why; the agent reads its command lines with Parse to find a service's
// log.
//
// It is a program of its own, apart from the agent, so that a new agent
// restarts nothing: Windows cannot replace the file of a running program,
// so every service whose process is the agent had to be stopped to upgrade
// it. winnode-service.exe carries no version stamp, so its bytes, and the
// services that run it, change only when its code does.
//
// (It is ours because the usual third-party wrappers, nssm or WinSW, are
// not Go modules the payload can be built from, and the ecosystem's own,
// kube-log-runner, never answers the service manager: run as a service's
// program it is killed with error 1053.)
package svcwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/winpath"
)

// Command is one command line of winnode-service.exe:
//
//	winnode-service.exe --name kubelet --log-file C:\var\log\kubelet\kubelet.log --log-file-size 100M --log-file-age 168h0m0s -- C:\k\kubelet.exe ARGS...
type Command struct {
	Name    string   `json:"name"`              // the service's name
	LogFile string   `json:"logFile,omitempty"` // where the program's output goes (Windows path)
	LogSize string   `json:"logFileSize,omitempty"`
	LogAge  string   `json:"logFileAge,omitempty"`
	Program string   `json:"program"` // the program (Windows path)
	Args    []string `json:"args"`    // its arguments
	// Before is a program and its arguments that run to their end before
	// the program starts, each time the service starts (--before,
	// --before-arg): kube-proxy's service writes there what depends on its
	// node's pod subnet (internal/plan, podnetwork.go). When it fails, the
	// service fails, and its recovery actions start it again.
	Before []string `json:"before,omitempty"`

	limits logrotate.Limits
}

// Limits are the log's rotation limits, as parsed by Check (the defaults
// when the command line names none).
func (c Command) Limits() logrotate.Limits { return c.limits }

// Check refuses a command line winnode-service cannot run: no name, no
// program, a program or log file that is not an absolute Windows path, a
// bad size or age; and reads the limits.
func (c *Command) Check() error {
	if c.Name == "" || c.Program == "" {
		return errors.New("--name and the program after -- are required")
	}
	if _, err := winpath.Parse(c.Program); err != nil {
		return fmt.Errorf("service %s: program: %w", c.Name, err)
	}
	if len(c.Before) > 0 {
		if _, err := winpath.Parse(c.Before[0]); err != nil {
			return fmt.Errorf("service %s: --before: %w", c.Name, err)
		}
	}
	c.limits = logrotate.Defaults
	if c.LogFile == "" {
		if c.LogSize != "" || c.LogAge != "" {
			return fmt.Errorf("service %s: --log-file-size and --log-file-age need --log-file", c.Name)
		}
		return nil
	}
	if _, err := winpath.Parse(c.LogFile); err != nil {
		return fmt.Errorf("service %s: --log-file: %w", c.Name, err)
	}
	var err error
	if c.LogSize != "" {
		if c.limits.Size, err = logrotate.ParseSize(c.LogSize); err != nil {
			return fmt.Errorf("service %s: --log-file-size: %w", c.Name, err)
		}
	}
	if c.LogAge != "" {
		if c.limits.Age, err = logrotate.ParseAge(c.LogAge); err != nil {
			return fmt.Errorf("service %s: --log-file-age: %w", c.Name, err)
		}
	}
	return nil
}

// Parse reads winnode-service's command line (without the program's own
// name): --name, --log-file, --log-file-size, --log-file-age, --before,
// --before-arg, --dry-run, then the program and its arguments, after "--" or from the first
// argument that is not a flag on. It is the one parser of these command
// lines: winnode-service itself, and the agent's info, which finds a
// service's log file in its command line.
func Parse(args []string) (c Command, dryRun bool, err error) {
	fs := pflag.NewFlagSet("winnode-service", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	fs.StringVar(&c.Name, "name", "", "the service's name")
	fs.StringVar(&c.LogFile, "log-file", "", "append the program's output to this file")
	fs.StringVar(&c.LogSize, "log-file-size", "", "rotate the log file at this size (a quantity: 100M, 50Mi; 0: never)")
	fs.StringVar(&c.LogAge, "log-file-age", "", "delete rotated log files older than this (168h; 0: never)")
	var before string
	var beforeArgs []string
	fs.StringVar(&before, "before", "", "a program to run to its end before the program, at each start")
	fs.StringArrayVar(&beforeArgs, "before-arg", nil, "an argument of --before's program (repeated, in order)")
	fs.BoolVar(&dryRun, "dry-run", false, "check the command line and print it as JSON; run nothing")
	if err := fs.Parse(args); err != nil {
		return c, false, err
	}
	if before != "" {
		c.Before = append([]string{before}, beforeArgs...)
	} else if len(beforeArgs) > 0 {
		return c, false, errors.New("--before-arg needs --before")
	}
	if rest := fs.Args(); len(rest) > 0 {
		c.Program, c.Args = rest[0], rest[1:]
	}
	return c, dryRun, c.Check()
}

// command is the program's process, its output (standard output and
// error) written to the rotating log file, its stdin empty. resolve maps a
// Windows path to the local one.
func (c Command) command(resolve func(string) (string, error)) (*exec.Cmd, io.WriteCloser, error) {
	if err := c.Check(); err != nil {
		return nil, nil, err
	}
	program, err := resolve(c.Program)
	if err != nil {
		return nil, nil, fmt.Errorf("service %s: program %s: %w", c.Name, c.Program, err)
	}
	var log io.WriteCloser = nopCloser{os.Stderr}
	if c.LogFile != "" {
		path, err := resolve(c.LogFile)
		if err != nil {
			return nil, nil, fmt.Errorf("service %s: log file %s: %w", c.Name, c.LogFile, err)
		}
		f, err := logrotate.Open(path, c.limits, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("service %s: %w", c.Name, err)
		}
		log = f
	}
	cmd := exec.Command(program, c.Args...)
	cmd.Args[0] = c.Program // what the program sees as its own name
	// The same writer for both: exec copies each pipe in its own goroutine
	// but calls Write of one comparable writer from one at a time.
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipes open does not hold the wrapper
	return cmd, log, nil
}

// serve runs before (Command.Before; nil: none) to its end, then
// supervises the program. A service stopped meanwhile ends with 0; a
// before that fails fails the service, whose recovery actions start it
// again.
func serve(ctx context.Context, before, cmd *exec.Cmd, log io.Writer) (int, error) {
	if before != nil {
		note(log, "running %s before %s", strings.Join(before.Args, " "), cmd.Args[0])
		err := before.Run()
		switch {
		case ctx.Err() != nil:
			note(log, "stopped %s (the service was stopped)", before.Args[0])
			return 0, nil
		case err != nil:
			note(log, "%s failed (%v): %s is not started", before.Args[0], err, cmd.Args[0])
			return 1, fmt.Errorf("%s: %w", before.Args[0], err)
		}
	}
	return supervise(ctx, cmd, log)
}

// beforeCommand is Before's process, its output in the service's log; nil
// when there is none. ctx ends it (the service's stop).
func (c Command) beforeCommand(ctx context.Context, resolve func(string) (string, error), log io.Writer) (*exec.Cmd, error) {
	if len(c.Before) == 0 {
		return nil, nil
	}
	program, err := resolve(c.Before[0])
	if err != nil {
		return nil, fmt.Errorf("service %s: --before %s: %w", c.Name, c.Before[0], err)
	}
	cmd := exec.CommandContext(ctx, program, c.Before[1:]...)
	cmd.Args[0] = c.Before[0]
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// note writes one of the wrapper's own lines in the service's log.
func note(log io.Writer, format string, args ...any) {
	fmt.Fprintf(log, "%s winnode-service: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// supervise starts cmd and waits for it, killing it when ctx ends, and
// notes both in the log. It returns the program's exit code (0 when it was
// stopped through ctx). Killing, not asking: Windows has no signal a
// console program's child could be asked with, and a program that outlives
// its service's stop (csi-proxy.exe's own service mode may: its server
// loop has no way to be stopped) would keep its files and named pipes.
func supervise(ctx context.Context, cmd *exec.Cmd, log io.Writer) (int, error) {
	note := func(format string, args ...any) { note(log, format, args...) }
	if err := cmd.Start(); err != nil {
		note("starting %s: %v", cmd.Args[0], err)
		return 1, fmt.Errorf("starting %s: %w", cmd.Args[0], err)
	}
	note("started %s (process %d)", cmd.Args[0], cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			note("%s exited with code %d", cmd.Args[0], exit.ExitCode())
			return exit.ExitCode(), fmt.Errorf("%s exited: %w", cmd.Args[0], err)
		}
		if err != nil {
			note("%s: %v", cmd.Args[0], err)
			return 1, err
		}
		// A service that ends without being stopped has failed, whatever
		// its code: exit 1 so that its recovery actions restart it.
		note("%s exited on its own with code 0; the service counts it as a failure", cmd.Args[0])
		return 1, fmt.Errorf("%s exited on its own", cmd.Args[0])
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		note("stopped %s (the service was stopped)", cmd.Args[0])
		return 0, nil
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
