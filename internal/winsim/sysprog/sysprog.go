// Package sysprog holds the programs a simulated Windows host (winsim)
// brings with its operating system, the ones an administrator types first
// on a new host and winnode's docs show: systeminfo.exe, hostname.exe,
// ipconfig.exe, sc.exe (qc and query) and powershell.exe with the few
// cmdlets the docs use (powershell.go). Each answers as the Windows
// program does, in its output format and in how it fails; where a
// program's format has free text the output says "simulated" (systeminfo's
// System Manufacturer), elsewhere only the simulated host's log says it
// (hostname must print the name alone). What a stand-in does not simulate
// it says so, instead of pretending to be Windows' answer.
//
// They run inside the simulated host's process, not as Linux programs: the
// host keeps a small file at each program's place in C:\Windows\System32
// (Stubs), so that cmd.exe's lookup finds them where Windows has them, and
// runs the program of that path (Lookup) with what it knows of itself
// (Env).
package sysprog

import (
	"io"
	"strings"

	"github.com/winnode/winnode/internal/simhns"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winpath"
)

// Services is what the programs read of the host's service control
// manager.
type Services interface {
	List() []simscm.Status
	Get(name string) (simscm.Service, error)
}

// Env is what a program learns about the simulated host it runs on, and
// its standard streams.
type Env struct {
	Info     simscm.HostInfo
	Services Services
	// HNS is the host's Host Networking Service (Get-HnsNetwork).
	HNS *simhns.Store
	// Root is the Linux folder that C:\ maps to; Cwd the current folder.
	Root string
	Cwd  winpath.Path
	// Exec runs another program of the host (PowerShell running a native
	// command: args[0] found in PATH, or a path) and returns its exit
	// code; ErrNoProgram when there is no such program.
	Exec func(args []string, stdout, stderr io.Writer) (int, error)

	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Program runs with its arguments (argv[1:]) and returns its exit code.
type Program func(e *Env, args []string) int

// programs maps each program's Windows path, lower-cased, to it.
var programs = map[string]Program{
	`c:\windows\system32\systeminfo.exe`:                        systeminfo,
	`c:\windows\system32\hostname.exe`:                          hostname,
	`c:\windows\system32\ipconfig.exe`:                          ipconfig,
	`c:\windows\system32\sc.exe`:                                sc,
	`c:\windows\system32\windowspowershell\v1.0\powershell.exe`: powershell,
}

// Lookup is the program at the Windows path p, if the simulated host
// brings one there.
func Lookup(p winpath.Path) (Program, bool) {
	prog, ok := programs[strings.ToLower(p.String())]
	return prog, ok
}

// Stubs lists the Windows paths of the programs, for the host to keep a
// file at each.
func Stubs() []string {
	paths := make([]string, 0, len(programs))
	for p := range programs {
		paths = append(paths, p)
	}
	return paths
}

// StubContent is what the file at each program's place holds: not a
// program (the host runs its own, Lookup).
const StubContent = "This file stands for a program of Windows on a simulated host (winsim): the simulated host runs its own stand-in of it (internal/winsim/sysprog).\r\n"

// crlf writes s with Windows line ends, as Windows console programs write.
func crlf(w io.Writer, s string) {
	_, _ = io.WriteString(w, strings.ReplaceAll(s, "\n", "\r\n"))
}
