package winsim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/acl"
	"github.com/winnode/winnode/internal/winsim/winexec"
)

// CloudbaseInitLog is cloudbase-init's log, where it installs it by
// default (C:\Program Files\Cloudbase Solutions\Cloudbase-Init\log), and
// where the simulated cloudbase-init writes what the user data's program
// printed and how it ended.
const CloudbaseInitLog = `C:\Program Files\Cloudbase Solutions\Cloudbase-Init\log\cloudbase-init.log`

// joinConfigDACL is what the Pull data's icacls line gives the join
// config: SYSTEM and Administrators, full control, nothing inherited.
const joinConfigDACL = "D:P(A;;FA;;;BA)(A;;FA;;;SY)"

// launch is the program the user data runs once the host has booted
// (the Pull data's `& $agent join`), as cloudbase-init runs the script
// after Windows has started: its command line, and the sentinel the
// script writes once it succeeded.
type launch struct {
	program  string // Windows path
	cmdline  string
	sentinel string

	started bool
	done    chan struct{}
	code    int
	proc    *os.Process // while it runs
	exe     os.FileInfo // its program file, while it runs
}

// userDataJoinConfig writes the Pull data's join config: an empty file,
// restricted by the script's icacls line when it has one, then its
// content, in the script's order.
func (h *Host) userDataJoinConfig(script []byte) error {
	m := joinConfigStatementRe.FindSubmatch(script)
	if m == nil {
		return nil
	}
	data := joinConfigDataRe.FindSubmatch(script)
	if data == nil {
		return fmt.Errorf("simulated host %s: user data: $joinConfig is set but no $joinConfigData here-string follows", h.id.Hostname)
	}
	path := string(m[1])
	local, err := h.Path(path)
	if err != nil {
		return fmt.Errorf("simulated host %s: user data: $joinConfig %q: %w", h.id.Hostname, path, err)
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(local, nil, 0o600); err != nil {
		return err
	}
	if joinConfigACLRe.Match(script) {
		if err := h.security.Set(path, acl.Administrators, joinConfigDACL); err != nil {
			return fmt.Errorf("simulated host %s: user data: icacls %s: %w", h.id.Hostname, path, err)
		}
	}
	h.log.Info("simulated launch agent: wrote the join config", "path", path, "bytes", len(data[1]))
	return os.WriteFile(local, data[1], 0o600)
}

// userDataAgent records the program the Pull data runs once the host is
// up; Start runs it.
func (h *Host) userDataAgent(script []byte) error {
	m := agentStatementRe.FindSubmatch(script)
	if m == nil || !agentJoinStatementRe.Match(script) {
		return nil
	}
	cfg := joinConfigStatementRe.FindSubmatch(script)
	if cfg == nil {
		return fmt.Errorf("simulated host %s: user data: `& $agent join --config $joinConfig` without $joinConfig", h.id.Hostname)
	}
	program := string(m[1])
	if _, err := winpath.Parse(program); err != nil {
		return fmt.Errorf("simulated host %s: user data: $agent %q: %w", h.id.Hostname, program, err)
	}
	h.launch = &launch{program: program, cmdline: wincmd.Join(program, "join", "--config", string(cfg[1])), done: make(chan struct{})}
	return nil
}

// runLaunch runs the user data's program after boot, as cloudbase-init
// does, and logs its output and exit code to CloudbaseInitLog. The
// script's Test-Path check comes first: a missing program fails the
// script with its words. On success the script goes on to the sentinel.
func (h *Host) runLaunch(l *launch) {
	defer close(l.done)
	var out bytes.Buffer
	l.code = h.runLaunchProgram(l, &out)
	h.cloudbaseInitLog(fmt.Sprintf("User_data stdout and stderr:\n%s", out.String()))
	if l.code != 0 {
		h.cloudbaseInitLog(fmt.Sprintf("Script ended with exit code: 1 (simulated): winnode-agent join failed (exit code %d)", l.code))
		h.log.Warn("simulated cloudbase-init: the user data's script failed", "program", l.program, "exitCode", l.code)
		return
	}
	if l.sentinel != "" {
		if err := h.writeSentinel(l.sentinel); err != nil {
			h.cloudbaseInitLog("writing the sentinel: " + err.Error())
			return
		}
	}
	h.cloudbaseInitLog("Script ended with exit code: 0 (simulated)")
	h.log.Info("simulated cloudbase-init: the user data's script succeeded", "program", l.program)
}

// runLaunchProgram starts the program under SYSTEM's environment with its
// output into out, and returns its exit code (1 when it cannot start).
func (h *Host) runLaunchProgram(l *launch, out *bytes.Buffer) int {
	local, err := h.Path(l.program)
	if err == nil {
		_, err = os.Stat(local)
	}
	if err != nil {
		fmt.Fprintf(out, "%s is missing: this Windows image does not carry winnode (bake in what winnodectl image writes)\n", l.program)
		return 1
	}
	cmd, err := h.startLaunch(l.cmdline, out)
	if err != nil {
		fmt.Fprintf(out, "%v\n", err)
		return 1
	}
	h.mu.Lock()
	l.proc = cmd.Process
	l.exe, _ = os.Stat(cmd.Path)
	h.mu.Unlock()
	h.log.Info("simulated cloudbase-init: running the user data's program", "command", l.cmdline, "pid", cmd.Process.Pid)
	_ = cmd.Wait()
	h.mu.Lock()
	l.proc = nil
	h.mu.Unlock()
	if code := cmd.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	return 1 // ended by a signal: Windows reports TerminateProcess's code 1
}

// startLaunch starts cmdline as cloudbase-init's service does, under
// SYSTEM, in C:\Windows\System32, trying again briefly while Linux refuses
// a program file another process still holds open for writing
// (session.start says why).
func (h *Host) startLaunch(cmdline string, out *bytes.Buffer) (*exec.Cmd, error) {
	system32, _ := winpath.Parse(`C:\Windows\System32`)
	host := h.execHost()
	host.User = "SYSTEM"
	for attempt := 0; ; attempt++ {
		cmd, err := winexec.Command(host, system32, cmdline, nil)
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.WaitDelay = 2 * time.Second
		err = cmd.Start()
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || attempt >= 40 {
			return cmd, err
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// cloudbaseInitLog appends a line to cloudbase-init's log.
func (h *Host) cloudbaseInitLog(msg string) {
	local, err := h.Path(CloudbaseInitLog)
	if err != nil {
		return
	}
	_ = os.MkdirAll(filepath.Dir(local), 0o755)
	f, err := os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s INFO cloudbaseinit.plugins.common.userdataplugins (simulated) %s\n", time.Now().UTC().Format("2006-01-02 15:04:05.000"), msg)
}

// UserDataProgram reports the program the user data runs after boot
// (the Pull data's winnode-agent join): whether there is one, whether it
// has ended, and its exit code then.
func (h *Host) UserDataProgram() (runs, ended bool, code int) {
	l := h.launch
	if l == nil {
		return false, false, 0
	}
	select {
	case <-l.done:
		return true, true, l.code
	default:
		return true, false, 0
	}
}

// startUserDataProgram runs the user data's program, once, after the first
// boot.
func (h *Host) startUserDataProgram() {
	h.mu.Lock()
	l := h.launch
	start := l != nil && !l.started
	if start {
		l.started = true
	}
	h.mu.Unlock()
	if start {
		go h.runLaunch(l)
	}
}

// killUserDataProgram ends the user data's program, as a power-off does.
func (h *Host) killUserDataProgram() {
	h.mu.Lock()
	var p *os.Process
	if h.launch != nil {
		p = h.launch.proc
	}
	h.mu.Unlock()
	if p != nil {
		_ = winexec.KillGroup(p)
	}
}
