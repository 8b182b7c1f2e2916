package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// RunService runs a program that cannot run as a Windows service itself as
// one. Windows' service control manager starts a service's binary and waits
// for it to call StartServiceCtrlDispatcher; a console program such as
// flanneld never does, so the SCM gives up on it with error 1053 ("The
// service did not respond to the start or control request in a timely
// fashion"; Microsoft's documentation of StartServiceCtrlDispatcherW). The
// plan then names the agent as the service's binary:
//
//	winnode-agent.exe run-service --name flanneld --log-file C:\var\log\flanneld\flanneld.log -- C:\k\flanneld.exe ARGS...
//
// and the agent answers the SCM, runs the program, writes its output to the
// log file, stops it when the service is stopped, and exits with the
// program's exit code when it ends on its own, so that the service's
// recovery actions restart it. It hosts the kubelet and kube-proxy too
// (internal/plan wrapped.go): they could answer the SCM themselves
// (--windows-service), but since Kubernetes v1.26 they log only to
// standard error, which the wrapper puts in their log file. (The wrapper
// is ours because the usual third-party ones, nssm or WinSW, are not Go
// modules the payload can be built from, and kube-log-runner does not
// answer the SCM.)
type RunService struct {
	Name    string   `json:"name"`              // the service's name
	LogFile string   `json:"logFile,omitempty"` // where the program's output goes (Windows path)
	Program string   `json:"program"`           // the program (Windows path)
	Args    []string `json:"args"`              // its arguments
}

// Check refuses a command line run-service cannot run: no name, no
// program, or a program or log file that is not an absolute Windows path.
func (r RunService) Check() error {
	if r.Name == "" || r.Program == "" {
		return errors.New("run-service: --name and the program after -- are required")
	}
	if _, err := winpath.Parse(r.Program); err != nil {
		return fmt.Errorf("run-service %s: program: %w", r.Name, err)
	}
	if r.LogFile != "" {
		if _, err := winpath.Parse(r.LogFile); err != nil {
			return fmt.Errorf("run-service %s: --log-file: %w", r.Name, err)
		}
	}
	return nil
}

// ParseRunService reads run-service's command line (the arguments after
// "run-service"): --name, --log-file, --dry-run, then the program and its
// arguments, after "--" or from the first argument that is not a flag on.
// It is the one parser of run-service's arguments: the command itself, and
// the agent's info, which finds a service's log file in its command line.
func ParseRunService(args []string) (r RunService, dryRun bool, err error) {
	fs := pflag.NewFlagSet(plan.RunServiceCommand, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	fs.StringVar(&r.Name, "name", "", "the service's name")
	fs.StringVar(&r.LogFile, "log-file", "", "append the program's output to this file")
	fs.BoolVar(&dryRun, "dry-run", false, "check the command line and print the service's name, log file, program and arguments as JSON; run nothing")
	if err := fs.Parse(args); err != nil {
		return r, false, err
	}
	if rest := fs.Args(); len(rest) > 0 {
		r.Program, r.Args = rest[0], rest[1:]
	}
	return r, dryRun, r.Check()
}

// maxLogBytes is where the log file is rotated (to .1) at start.
const maxLogBytes = 10 << 20

// command is the program's process, its output appended to the log file
// (rotated once it passes maxLogBytes), its stdin empty.
func (r RunService) command(resolve func(string) (string, error)) (*exec.Cmd, io.WriteCloser, error) {
	if err := r.Check(); err != nil {
		return nil, nil, err
	}
	program, err := resolve(r.Program)
	if err != nil {
		return nil, nil, fmt.Errorf("run-service %s: program %s: %w", r.Name, r.Program, err)
	}
	var log io.WriteCloser = nopCloser{os.Stderr}
	if r.LogFile != "" {
		path, err := resolve(r.LogFile)
		if err != nil {
			return nil, nil, fmt.Errorf("run-service %s: log file %s: %w", r.Name, r.LogFile, err)
		}
		if st, err := os.Stat(path); err == nil && st.Size() > maxLogBytes {
			_ = os.Rename(path, path+".1")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, nil, fmt.Errorf("run-service %s: %w", r.Name, err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("run-service %s: %w", r.Name, err)
		}
		log = f
	}
	cmd := exec.Command(program, r.Args...)
	cmd.Args[0] = r.Program // what the program sees as its own name
	cmd.Stdout, cmd.Stderr = log, log
	return cmd, log, nil
}

// supervise starts cmd and waits for it, killing it when ctx ends. It
// returns the program's exit code (0 when it was stopped through ctx).
func supervise(ctx context.Context, cmd *exec.Cmd) (int, error) {
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("starting %s: %w", cmd.Args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), fmt.Errorf("%s exited: %w", cmd.Args[0], err)
		}
		if err != nil {
			return 1, err
		}
		// A service that ends without being stopped has failed, whatever
		// its code: exit 1 so that its recovery actions restart it.
		return 1, fmt.Errorf("%s exited on its own", cmd.Args[0])
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return 0, nil
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
