//go:build !windows

package svcwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winpath"
)

// Run runs the program on a winsim simulated host, whose service control
// manager stops a service with SIGTERM (ctx): Windows paths resolve under
// the simulated C:\ (simscm.EnvRoot).
func (c Command) Run(ctx context.Context) int {
	root := os.Getenv(simscm.EnvRoot)
	if root == "" {
		fmt.Fprintf(os.Stderr, "winnode-service: this build runs only on a winsim simulated host (%s unset)\n", simscm.EnvRoot)
		return 1
	}
	cmd, log, err := c.command(func(p string) (string, error) { return winpath.ResolveString(root, p) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer log.Close()
	before, err := c.beforeCommand(ctx, func(p string) (string, error) { return winpath.ResolveString(root, p) }, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Windows runs any file with a program extension; Linux needs the
	// execute bit, which SFTP uploads do not carry (as winsim's own
	// process start does it).
	for _, p := range []*exec.Cmd{before, cmd} {
		if p == nil {
			continue
		}
		if fi, err := os.Stat(p.Path); err == nil && fi.Mode().Perm()&0o100 == 0 {
			_ = os.Chmod(p.Path, fi.Mode().Perm()|0o755)
		}
		p.Env = os.Environ()
	}
	// The agent is the process the service control manager started: it
	// answers it before starting the program, as the Windows build does
	// through svc.Run. A process the SCM did not start as a service (a run
	// from a console) is told so, and runs the program in the foreground
	// as the Windows build does.
	if err := simscm.Dial(os.Getenv(simscm.EnvSocket)).ConnectDispatcher(ctx); err != nil && !errors.Is(err, simscm.ErrControllerConnect) {
		fmt.Fprintf(os.Stderr, "winnode-service %s: answering the service control manager: %v\n", c.Name, err)
		return 1
	}
	code, err := serve(ctx, before, cmd, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "winnode-service %s: %v\n", c.Name, err)
	}
	return code
}
