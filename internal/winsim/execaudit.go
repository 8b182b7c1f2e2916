package winsim

import (
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/winexec"
)

// UnsafeExec is a program the SSH server ran, as the host's administrator,
// from where a local user who is not an administrator could have replaced
// it or planted a DLL beside it (acl.Store.UserExposure says why).
type UnsafeExec struct {
	Program string // Windows path
	Why     string
}

// auditExec records cmdline's program when it is exposed to local users.
// Windows runs such a program all the same (this is the simulator
// auditing, not refusing): the log line and UnsafeExecs let tests show
// that winnode never does it.
func (h *Host) auditExec(cwd winpath.Path, cmdline string) {
	args := wincmd.Split(cmdline)
	if len(args) == 0 {
		return
	}
	prog, _, err := winexec.LookPath(h.root, cwd, args[0])
	if err != nil {
		return
	}
	why, err := h.security.UserExposure(prog.String())
	if err != nil {
		why = "its security could not be read: " + err.Error()
	}
	if why == "" {
		return
	}
	h.log.Warn("simulated host: ran a program as Administrator from where local users can write", "program", prog.String(), "why", why)
	h.mu.Lock()
	h.unsafeExecs = append(h.unsafeExecs, UnsafeExec{Program: prog.String(), Why: why})
	h.mu.Unlock()
}

// UnsafeExecs lists, in order, the programs run over SSH from where a local
// user who is not an administrator could write.
func (h *Host) UnsafeExecs() []UnsafeExec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]UnsafeExec(nil), h.unsafeExecs...)
}
