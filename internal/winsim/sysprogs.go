package winsim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/winnode/winnode/internal/simhns"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/sysprog"
	"github.com/winnode/winnode/internal/winsim/winexec"
)

// The programs the simulated host brings with its Windows (package
// sysprog: systeminfo, hostname, ipconfig, sc, powershell) run in the
// host's process. A file stands at each one's place in C:\Windows, so
// that cmd.exe's lookup (a program in the current folder comes first)
// finds them as it finds Windows' own.

// system32 is where PowerShell looks for a native command named without a
// folder first: it searches PATH only, not the current folder, and
// C:\Windows\system32 leads PATH.
var system32, _ = winpath.Parse(`C:\Windows\System32`)

// installSystemPrograms puts the file of each of the host's own programs
// in place, once.
func (h *Host) installSystemPrograms() error {
	for _, p := range sysprog.Stubs() {
		local, err := winpath.ResolveString(h.root, p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(local); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return fmt.Errorf("simulated host %s: %w", h.id.Hostname, err)
		}
		if err := os.WriteFile(local, []byte(sysprog.StubContent), 0o644); err != nil {
			return fmt.Errorf("simulated host %s: %w", h.id.Hostname, err)
		}
	}
	return nil
}

// systemProgram is the host's own program that cmdline runs, with its
// arguments; false when cmdline runs something else (or nothing: the
// caller reports that).
func (h *Host) systemProgram(cwd winpath.Path, cmdline string) (sysprog.Program, winpath.Path, []string, bool) {
	if winexec.CheckOperators(cmdline) != nil {
		return nil, winpath.Path{}, nil, false
	}
	args := wincmd.Split(cmdline)
	if len(args) == 0 {
		return nil, winpath.Path{}, nil, false
	}
	wp, _, err := winexec.LookPath(h.root, cwd, args[0])
	if err != nil {
		return nil, winpath.Path{}, nil, false
	}
	prog, ok := sysprog.Lookup(wp)
	return prog, wp, args[1:], ok
}

// systemEnv is what the host's own programs learn of it, for one run in
// the folder cwd.
func (h *Host) systemEnv(cwd winpath.Path, stdin io.Reader, stdout, stderr io.Writer) *sysprog.Env {
	e := &sysprog.Env{
		Info:     h.hostInfo(),
		Services: h.scm,
		HNS:      simhns.Open(h.root),
		Root:     h.root,
		Cwd:      cwd,
		Stdin:    stdin,
		Stdout:   stdout,
		Stderr:   stderr,
	}
	e.Exec = func(args []string, out, errOut io.Writer) (int, error) {
		return h.runNative(cwd, args, out, errOut)
	}
	return e
}

// runNative runs a program for PowerShell (a native command): found in
// PATH or at the path given, the host's own or one in its filesystem; its
// exit code, or sysprog.ErrNoProgram.
func (h *Host) runNative(cwd winpath.Path, args []string, stdout, stderr io.Writer) (int, error) {
	wp, _, err := winexec.LookPath(h.root, system32, args[0])
	if err != nil {
		return 0, sysprog.ErrNoProgram
	}
	h.log.Info("simulated host: PowerShell runs a program", "program", wp.String())
	if prog, ok := sysprog.Lookup(wp); ok {
		return prog(h.systemEnv(cwd, eof{}, stdout, stderr), args[1:]), nil
	}
	h.auditExec(cwd, wincmd.Join(append([]string{wp.String()}, args[1:]...)...))
	cmd, err := winexec.Command(h.execHost(), cwd, wincmd.Join(append([]string{wp.String()}, args[1:]...)...), nil)
	if err != nil {
		return 0, err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return max(exit.ExitCode(), 1), nil
	case err != nil:
		return 0, err
	}
	return 0, nil
}

// eof is an empty input.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }
