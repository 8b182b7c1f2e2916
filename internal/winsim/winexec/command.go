package winexec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/filestore"
)

// SearchPath is the simulated host's PATH (the folders cmd.exe searches for
// a program named without a folder, after the current folder), as on a fresh
// Windows Server.
var SearchPath = []string{
	`C:\Windows\system32`,
	`C:\Windows`,
	`C:\Windows\System32\Wbem`,
	`C:\Windows\System32\WindowsPowerShell\v1.0`,
	`C:\Windows\System32\OpenSSH`,
}

// pathExt lists the extensions cmd.exe tries, in order, for a program named
// without one (PATHEXT). Batch files (.bat, .cmd) need cmd.exe itself, which
// is not simulated, so only programs count.
var pathExt = []string{".com", ".exe"}

// NotRecognizedError is cmd.exe's answer when a program does not exist.
type NotRecognizedError struct {
	Name string // as typed
}

func (e *NotRecognizedError) Error() string {
	return fmt.Sprintf("'%s' is not recognized as an internal or external command, operable program or batch file.", e.Name)
}

// ErrWindowsExecutable is returned for a real Windows program (a PE file):
// the simulator runs Linux builds that stand in for Windows programs, never
// Windows programs themselves.
var ErrWindowsExecutable = errors.New("cannot run a Windows executable on a simulated host (winsim runs Linux builds that stand in for Windows programs; upload the Linux build under the .exe name)")

// ErrShellOperators is returned when a command line uses cmd.exe's
// operators, which the simulated host does not interpret.
var ErrShellOperators = errors.New("cmd.exe operators (& | < > ^) are not simulated on this simulated host: run exactly one program and quote its arguments")

// Host is what a program learns about the simulated host it runs on.
type Host struct {
	Root      string // Linux folder that C:\ maps to
	SCMSocket string // Unix socket of the host's service control manager
	Hostname  string
	User      string   // "Administrator"
	Extra     []string // more environment, "NAME=value"
	// Store, when set, shares each program's file with the other hosts'
	// of the same path and content before it runs (package filestore).
	Store *filestore.Store
}

// LookPath finds the program named by name as cmd.exe would: a name with a
// folder is taken relative to cwd; a bare name is looked up in cwd, then in
// SearchPath; a name without a program extension gets .com then .exe. It
// returns the Windows path and the Linux file standing for it.
func LookPath(root string, cwd winpath.Path, name string) (winpath.Path, string, error) {
	notFound := &NotRecognizedError{Name: name}
	if name == "" || strings.ContainsRune(name, 0) {
		return winpath.Path{}, "", notFound
	}
	var dirs []winpath.Path
	base := name
	if strings.ContainsAny(name, `\/:`) {
		var p winpath.Path
		if abs, err := winpath.Parse(name); err == nil {
			p = abs
		} else if len(name) > 1 && name[1] == ':' {
			return winpath.Path{}, "", notFound // drive-relative: not simulated
		} else {
			p = cwd.Join(name)
		}
		dirs = []winpath.Path{p.Dir()}
		base = p.Base()
	} else {
		dirs = append(dirs, cwd)
		for _, d := range SearchPath {
			if p, err := winpath.Parse(d); err == nil {
				dirs = append(dirs, p)
			}
		}
	}
	if base == "" {
		return winpath.Path{}, "", notFound
	}
	candidates := []string{base}
	if !hasProgramExt(base) {
		candidates = nil
		for _, ext := range pathExt {
			candidates = append(candidates, base+ext)
		}
	}
	for _, d := range dirs {
		for _, c := range candidates {
			wp := d.Join(c)
			lp, err := winpath.Resolve(root, wp)
			if err != nil {
				continue
			}
			if fi, err := os.Stat(lp); err == nil && fi.Mode().IsRegular() {
				return wp, lp, nil
			}
		}
	}
	return winpath.Path{}, "", notFound
}

func hasProgramExt(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range pathExt {
		if ext == e {
			return true
		}
	}
	return false
}

// CheckOperators refuses a command line that uses cmd.exe operators outside
// double quotes.
func CheckOperators(cmdline string) error {
	inQuote := false
	for _, r := range cmdline {
		switch {
		case r == '"':
			inQuote = !inQuote
		case !inQuote && strings.ContainsRune("&|<>^", r):
			return ErrShellOperators
		}
	}
	return nil
}

// IsWindowsExecutable says whether the file starts with the "MZ" header of
// a Windows program.
func IsWindowsExecutable(linuxPath string) (bool, error) {
	f, err := os.Open(linuxPath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return false, nil // shorter than a header: not a PE file
	}
	return string(hdr) == "MZ", nil
}

// Command builds the Linux process that runs the Windows command line on the
// simulated host, in the Windows folder cwd, with the host's environment and
// extraEnv ("NAME=value"). The process gets its own process group, so that
// Kill ends it and its children. The caller sets Stdin/Stdout/Stderr.
func Command(h Host, cwd winpath.Path, cmdline string, extraEnv []string) (*exec.Cmd, error) {
	if err := CheckOperators(cmdline); err != nil {
		return nil, err
	}
	args := wincmd.Split(cmdline)
	if len(args) == 0 {
		return nil, &NotRecognizedError{Name: ""}
	}
	wp, prog, err := LookPath(h.Root, cwd, args[0])
	if err != nil {
		return nil, err
	}
	pe, err := IsWindowsExecutable(prog)
	if err != nil {
		return nil, fmt.Errorf("simulated host: reading %s: %w", args[0], err)
	}
	if pe {
		return nil, fmt.Errorf("%s: %w", args[0], ErrWindowsExecutable)
	}
	// Windows runs any file with a program extension; Linux needs the
	// execute bit, which SFTP uploads need not carry.
	if fi, err := os.Stat(prog); err == nil && fi.Mode().Perm()&0o100 == 0 {
		if err := os.Chmod(prog, fi.Mode().Perm()|0o755); err != nil {
			return nil, fmt.Errorf("simulated host: making %s executable: %w", args[0], err)
		}
	}
	if err := shareProgramFiles(h, wp, prog, args[1:]); err != nil {
		return nil, fmt.Errorf("simulated host: %w", err)
	}
	dir, err := winpath.Resolve(h.Root, cwd)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simulated host: working folder %s: %w", cwd, err)
	}
	c := exec.Command(prog, args[1:]...)
	c.Args[0] = prog
	c.Dir = dir
	c.Env = append(Environ(h), extraEnv...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c, nil
}

// shareProgramFiles shares, through the host's file store (Host.Store),
// the program's file and those of the programs its arguments name by an
// absolute Windows path (the program a service wrapper runs as its child:
// `winnode-service.exe ... -- C:\k\kubelet.exe`), before any of them
// runs. The store shares programs only, so an argument naming a data file
// leaves it as it is.
func shareProgramFiles(h Host, wp winpath.Path, prog string, args []string) error {
	if h.Store == nil {
		return nil
	}
	if err := h.Store.Share(wp, prog); err != nil {
		return err
	}
	for _, a := range args {
		p, err := winpath.Parse(a)
		if err != nil {
			continue // not an absolute Windows path
		}
		lp, err := winpath.Resolve(h.Root, p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(lp); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := h.Store.Share(p, lp); err != nil {
			return err
		}
	}
	return nil
}

// KillGroup ends the process and every process in its group.
func KillGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
}

// SignalGroup sends sig to the process's group.
func SignalGroup(p *os.Process, sig syscall.Signal) error {
	if p == nil {
		return nil
	}
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		return p.Signal(sig)
	}
	return nil
}

// Environ is the environment of a program on the simulated host: the path
// mapping and SCM address (simscm.EnvRoot, simscm.EnvSocket), the usual Windows
// variables, and what the Linux process itself needs (PATH, HOME, TMPDIR).
func Environ(h Host) []string {
	user := h.User
	if user == "" {
		user = "Administrator"
	}
	profile := `C:\Users\` + user
	linuxProfile, _ := winpath.ResolveString(h.Root, profile)
	linuxTemp, _ := winpath.ResolveString(h.Root, profile+`\AppData\Local\Temp`)
	_ = os.MkdirAll(linuxTemp, 0o755)
	env := []string{
		simscm.EnvRoot + "=" + h.Root,
		simscm.EnvSocket + "=" + h.SCMSocket,
		"COMPUTERNAME=" + strings.ToUpper(h.Hostname),
		"USERNAME=" + user,
		"USERDOMAIN=" + strings.ToUpper(h.Hostname),
		"USERPROFILE=" + profile,
		"ProgramData=C:\\ProgramData",
		"ProgramFiles=C:\\Program Files",
		"SystemDrive=C:",
		"SystemRoot=C:\\Windows",
		"windir=C:\\Windows",
		"OS=Windows_NT",
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + linuxProfile,
		"TMPDIR=" + linuxTemp,
	}
	// Coverage of the project's own programs when tests ask for it.
	if v, ok := os.LookupEnv("GOCOVERDIR"); ok {
		env = append(env, "GOCOVERDIR="+v)
	}
	return append(env, h.Extra...)
}
