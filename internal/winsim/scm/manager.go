// Package scm is the simulated Windows service control manager of a winsim
// host: it installs, starts, stops and recovers services as real Linux
// processes, and serves the small local API of package simscm (HTTP + JSON
// over a Unix socket) through which programs running on that simulated host
// reach it. The API's types, errors and client are simscm's; this package is
// only the server, which the agent never links.
package scm

import (
	"github.com/winnode/winnode/internal/winsim/acl"
	"net/http"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/winexec"
)

// This file is the server side: the simulated service control manager
// itself. Services are real Linux processes started through winexec, so a
// service's BinaryPathName is resolved exactly as an SSH exec would be.

// ManagerOptions configures a Manager.
type ManagerOptions struct {
	// StateFile keeps the services' configuration between runs (the
	// simulated registry).
	StateFile string
	// Host is where the services run (C:\ folder, SCM socket, hostname).
	Host winexec.Host
	// LogDir is the Windows folder receiving <service>.log, each service's
	// standard output and error.
	LogDir string
	// StopTimeout is how long a stopping service may take before it is
	// killed. Default 10s.
	StopTimeout time.Duration
	// StartTimeout is how long a started service's process has to answer
	// (simscm.Client.ConnectDispatcher) before it is killed and Start fails
	// with simscm.ErrRequestTimeout. Default DefaultStartTimeout, Windows'
	// own (ServicesPipeTimeout); tests of a program that never answers set
	// less, so that they need not wait for it.
	StartTimeout time.Duration
	Logger       *slog.Logger
	// Security is the host's store of owners and ACLs, served at
	// /v1/security (nil: not served).
	Security *acl.Store
	// Routes, when set, adds the host's other routes (features, Defender,
	// certificate store: internal/winsim hostsettings.go) to the API.
	Routes func(mux *http.ServeMux)
}

// DefaultStartTimeout is Windows' default service start timeout: the
// service control manager waits 30 seconds for a started service's process
// to call StartServiceCtrlDispatcher (the ServicesPipeTimeout registry value,
// HKLM\SYSTEM\CurrentControlSet\Control, when not set).
const DefaultStartTimeout = 30 * time.Second

// Manager is one simulated host's service control manager.
type Manager struct {
	opts ManagerOptions
	log  *slog.Logger

	mu sync.Mutex
	// changed is signalled (Broadcast) whenever a service's process answers
	// or ends, or a start times out: Start waits on it for its process's
	// answer without holding mu.
	changed  *sync.Cond
	services map[string]*service // by lower-case name: Windows names are case-insensitive
	down     bool                // the host is shut down: nothing starts, nothing recovers
}

// service is one installed service and its running process, if any.
type service struct {
	cfg         simscm.Config
	state       simscm.State
	pid         int
	exitCode    int
	failures    int
	lastFailure time.Time
	deleted     bool // marked for deletion: gone once stopped

	proc     *os.Process
	exe      os.FileInfo   // the running program's file, as it was when started
	done     chan struct{} // closed when the process has ended
	stopping bool
	// killedAtStart: the SCM killed the process because it did not answer
	// in time (not a crash: no recovery action).
	killedAtStart bool
	restart       *time.Timer
}

// NewManager loads the saved services. Nothing runs until Boot.
func NewManager(opts ManagerOptions) (*Manager, error) {
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LogDir == "" {
		opts.LogDir = `C:\ProgramData\winsim\logs`
	}
	m := &Manager{opts: opts, log: opts.Logger, services: map[string]*service{}, down: true}
	m.changed = sync.NewCond(&m.mu)
	data, err := os.ReadFile(opts.StateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("simulated service control manager: reading %s: %w", opts.StateFile, err)
	default:
		var cfgs []simscm.Config
		if err := json.Unmarshal(data, &cfgs); err != nil {
			return nil, fmt.Errorf("simulated service control manager: %s is damaged (%v); delete it to start with no services", opts.StateFile, err)
		}
		for _, c := range cfgs {
			m.services[key(c.Name)] = &service{cfg: c, state: simscm.Stopped}
		}
	}
	return m, nil
}

func key(name string) string { return strings.ToLower(name) }

// save writes the configuration of every service not marked for deletion.
// Callers hold m.mu.
func (m *Manager) save() error {
	cfgs := []simscm.Config{}
	for _, s := range m.services {
		cfgs = append(cfgs, s.cfg)
	}
	sort.Slice(cfgs, func(i, j int) bool { return key(cfgs[i].Name) < key(cfgs[j].Name) })
	data, err := json.MarshalIndent(cfgs, "", "  ")
	if err != nil {
		return err
	}
	tmp := m.opts.StateFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("simulated service control manager: saving services: %w", err)
	}
	return os.Rename(tmp, m.opts.StateFile)
}

func validate(c simscm.Config) error {
	if c.Name == "" || strings.ContainsAny(c.Name, `/\`) || len(c.Name) > 256 {
		return fmt.Errorf("%w: service name %q (1-256 characters, no / or \\)", simscm.ErrInvalid, c.Name)
	}
	if strings.TrimSpace(c.BinaryPathName) == "" {
		return fmt.Errorf("%w: service %s: empty binaryPathName", simscm.ErrInvalid, c.Name)
	}
	switch c.StartType {
	case plan.StartAuto, plan.StartManual, plan.StartDisabled:
	default:
		return fmt.Errorf("%w: service %s: start type %q (want auto, manual or disabled)", simscm.ErrInvalid, c.Name, c.StartType)
	}
	for _, a := range c.RecoveryActions {
		if a.Type != plan.RecoveryRestart && a.Type != plan.RecoveryNone {
			return fmt.Errorf("%w: service %s: recovery action %q (want restart or none)", simscm.ErrInvalid, c.Name, a.Type)
		}
		if a.Delay < 0 {
			return fmt.Errorf("%w: service %s: negative recovery delay", simscm.ErrInvalid, c.Name)
		}
	}
	for _, d := range c.Dependencies {
		if strings.EqualFold(d, c.Name) {
			return fmt.Errorf("%w: service %s depends on itself", simscm.ErrInvalid, c.Name)
		}
	}
	for _, e := range c.Environment {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return fmt.Errorf("%w: service %s: environment entry %q is not NAME=value", simscm.ErrInvalid, c.Name, e)
		}
	}
	return nil
}

// Create installs a service (Stopped).
func (m *Manager) Create(c simscm.Config) error {
	if err := validate(c); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.services[key(c.Name)]; ok {
		if s.deleted {
			return fmt.Errorf("%w: %s", simscm.ErrMarkedForDelete, c.Name)
		}
		return fmt.Errorf("%w: %s", simscm.ErrExists, c.Name)
	}
	m.services[key(c.Name)] = &service{cfg: c, state: simscm.Stopped}
	m.log.Info("simulated service control manager: service installed", "service", c.Name, "startType", c.StartType)
	return m.save()
}

// Update changes a service's configuration; its state stays as it is (a
// running service uses the new command line from its next start).
func (m *Manager) Update(c simscm.Config) error {
	if err := validate(c); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.find(c.Name)
	if err != nil {
		return err
	}
	c.Name = s.cfg.Name
	s.cfg = c
	m.log.Info("simulated service control manager: service configuration changed", "service", c.Name)
	return m.save()
}

// find returns a service not marked for deletion. Callers hold m.mu.
func (m *Manager) find(name string) (*service, error) {
	s, ok := m.services[key(name)]
	if !ok {
		return nil, fmt.Errorf("%w: %s", simscm.ErrNotFound, name)
	}
	if s.deleted {
		return nil, fmt.Errorf("%w: %s", simscm.ErrMarkedForDelete, name)
	}
	return s, nil
}

func (s *service) status() simscm.Status {
	return simscm.Status{Name: s.cfg.Name, State: s.state, PID: s.pid, ExitCode: s.exitCode, Failures: s.failures}
}

// Get returns a service's configuration and status.
func (m *Manager) Get(name string) (simscm.Service, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.services[key(name)]
	if !ok {
		return simscm.Service{}, fmt.Errorf("%w: %s", simscm.ErrNotFound, name)
	}
	return simscm.Service{Config: s.cfg, Status: s.status()}, nil
}

// List returns every service's status, by name.
func (m *Manager) List() []simscm.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []simscm.Status{}
	for _, s := range m.services {
		out = append(out, s.status())
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i].Name) < key(out[j].Name) })
	return out
}

// Delete removes a service: at once when it is stopped, else it is marked
// for deletion and disappears once it stops.
func (m *Manager) Delete(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.find(name)
	if err != nil {
		return err
	}
	if s.restart != nil {
		s.restart.Stop()
		s.restart = nil
	}
	s.deleted = true
	if s.state == simscm.Stopped {
		delete(m.services, key(name))
	}
	m.log.Info("simulated service control manager: service deleted", "service", s.cfg.Name, "pendingStop", s.state != simscm.Stopped)
	return m.save()
}

// Start starts a service, its dependencies first (whatever their start
// type, as Windows does). It returns once the service's process has
// answered (simscm.Client.ConnectDispatcher), as StartService does.
func (m *Manager) Start(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.find(name)
	if err != nil {
		return err
	}
	if s.state == simscm.Running || s.state == simscm.StartPending {
		return fmt.Errorf("%w: %s", simscm.ErrAlreadyRunning, s.cfg.Name)
	}
	return m.startLocked(s, map[string]bool{})
}

// startLocked starts s after its dependencies. Callers hold m.mu.
func (m *Manager) startLocked(s *service, visiting map[string]bool) error {
	if m.down {
		return fmt.Errorf("simulated service control manager: the host is shutting down; %s not started", s.cfg.Name)
	}
	if s.cfg.StartType == plan.StartDisabled {
		return fmt.Errorf("%w: %s", simscm.ErrDisabled, s.cfg.Name)
	}
	if s.state == simscm.Running || s.state == simscm.StartPending {
		return nil
	}
	visiting[key(s.cfg.Name)] = true
	defer delete(visiting, key(s.cfg.Name))
	for _, d := range s.cfg.Dependencies {
		if visiting[key(d)] {
			return fmt.Errorf("%w: %s: circular dependency through %s", simscm.ErrDependencyFailed, s.cfg.Name, d)
		}
		dep, err := m.find(d)
		if err != nil {
			return fmt.Errorf("%w: %s depends on %s: %v", simscm.ErrDependencyFailed, s.cfg.Name, d, err)
		}
		if err := m.startLocked(dep, visiting); err != nil {
			return fmt.Errorf("%w: %s depends on %s: %v", simscm.ErrDependencyFailed, s.cfg.Name, dep.cfg.Name, err)
		}
	}
	return m.launch(s)
}

// launch starts the service's process with its output appended to its log.
func (m *Manager) launch(s *service) error {
	if s.restart != nil {
		s.restart.Stop()
		s.restart = nil
	}
	s.state = simscm.StartPending
	cwd, _ := winpath.Parse(`C:\Windows\System32`)
	cmd, err := winexec.Command(m.opts.Host, cwd, s.cfg.BinaryPathName, s.cfg.Environment)
	if err != nil {
		s.state = simscm.Stopped
		var nr *winexec.NotRecognizedError
		if errors.As(err, &nr) {
			return fmt.Errorf("%w: service %s: %s", simscm.ErrFileNotFound, s.cfg.Name, firstArg(s.cfg.BinaryPathName))
		}
		return fmt.Errorf("simulated service control manager: service %s: %w", s.cfg.Name, err)
	}
	logFile, err := m.openLog(s.cfg.Name)
	if err != nil {
		s.state = simscm.Stopped
		return err
	}
	fmt.Fprintf(logFile, "%s [winsim] simulated service control manager: starting service %s: %s\n",
		time.Now().UTC().Format(time.RFC3339), s.cfg.Name, s.cfg.BinaryPathName)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		s.state = simscm.Stopped
		return fmt.Errorf("simulated service control manager: starting service %s: %w", s.cfg.Name, err)
	}
	logFile.Close() // the child has its own copy
	s.proc, s.pid, s.stopping, s.killedAtStart = cmd.Process, cmd.Process.Pid, false, false
	s.exe, _ = os.Stat(cmd.Path)
	s.done = make(chan struct{})
	m.log.Info("simulated service control manager: service process started, waiting for it to answer", "service", s.cfg.Name, "pid", s.pid)
	go m.wait(s, cmd, s.done)
	return m.awaitAnswer(s, s.done)
}

// awaitAnswer waits, without holding mu, until the process of this start
// (done) answers, ends, or lets the start timeout pass. Windows'
// StartService behaves so: ERROR_SERVICE_REQUEST_TIMEOUT (1053) once the
// process has not called StartServiceCtrlDispatcher within the timeout
// (the process is then ended), ERROR_PROCESS_ABORTED (1067) when it ends
// before. Callers hold m.mu.
func (m *Manager) awaitAnswer(s *service, done chan struct{}) error {
	timedOut := false
	timer := time.AfterFunc(m.opts.StartTimeout, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		timedOut = true
		m.changed.Broadcast()
	})
	defer timer.Stop()
	ended := func() bool { return s.done != done || isClosed(done) }
	for s.state == simscm.StartPending && !ended() && !timedOut {
		m.changed.Wait()
	}
	switch {
	case s.state == simscm.Running && !ended():
		return nil
	case !ended():
		// Still pending at the timeout: Windows ends the process.
		s.killedAtStart = true
		proc := s.proc
		m.log.Warn("simulated service control manager: service did not answer in time; killing its process (event 7009)",
			"service", s.cfg.Name, "timeout", m.opts.StartTimeout)
		_ = winexec.KillGroup(proc)
		for !ended() {
			m.changed.Wait()
		}
		return fmt.Errorf("%w: service %s: its process did not connect to the service control manager within %s", simscm.ErrRequestTimeout, s.cfg.Name, m.opts.StartTimeout)
	default:
		return fmt.Errorf("%w: service %s: its process exited with code %d before it answered the service control manager (its log: %s)",
			simscm.ErrProcessAborted, s.cfg.Name, s.exitCode, m.LogPath(s.cfg.Name))
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Dispatcher is a process answering the SCM (simscm.Client.ConnectDispatcher):
// the service whose process has this PID becomes Running. A process the SCM
// did not start for a service gets simscm.ErrControllerConnect, as
// StartServiceCtrlDispatcher fails in a program not started as a service.
func (m *Manager) Dispatcher(pid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.services {
		if s.proc == nil || s.pid != pid {
			continue
		}
		if s.state != simscm.StartPending {
			return fmt.Errorf("%w: service %s already answered", simscm.ErrAlreadyRunning, s.cfg.Name)
		}
		s.state = simscm.Running
		m.log.Info("simulated service control manager: service running", "service", s.cfg.Name, "pid", pid)
		m.changed.Broadcast()
		return nil
	}
	return fmt.Errorf("%w: process %d was not started by the service control manager as a service", simscm.ErrControllerConnect, pid)
}

func firstArg(cmdline string) string {
	if a := wincmd.Split(cmdline); len(a) > 0 {
		return a[0]
	}
	return cmdline
}

func (m *Manager) openLog(name string) (*os.File, error) {
	dir, err := winpath.ResolveString(m.opts.Host.Root, m.opts.LogDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simulated service control manager: log folder %s: %w", m.opts.LogDir, err)
	}
	return os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// LogPath is the Windows path of a service's log file.
func (m *Manager) LogPath(name string) string {
	return strings.TrimRight(m.opts.LogDir, `\`) + `\` + name + ".log"
}

// wait notices the end of a service's process: a requested stop, or a
// crash that the recovery actions answer.
func (m *Manager) wait(s *service, cmd *exec.Cmd, done chan struct{}) {
	_ = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code < 0 {
		code = 1067 // ERROR_PROCESS_ABORTED: "The process terminated unexpectedly."
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.changed.Broadcast()
	defer close(done)
	s.proc, s.pid, s.exitCode = nil, 0, code
	wasStopping := s.stopping || s.killedAtStart
	s.state, s.stopping = simscm.Stopped, false
	if s.deleted {
		if cur, ok := m.services[key(s.cfg.Name)]; ok && cur == s {
			delete(m.services, key(s.cfg.Name))
		}
		m.log.Info("simulated service control manager: service stopped and removed", "service", s.cfg.Name)
		return
	}
	if wasStopping || m.down {
		m.log.Info("simulated service control manager: service stopped", "service", s.cfg.Name, "exitCode", code)
		return
	}
	// A crash (Windows event 7031/7034).
	now := time.Now()
	if s.cfg.ResetPeriod <= 0 || now.Sub(s.lastFailure) > s.cfg.ResetPeriod {
		s.failures = 0
	}
	s.failures++
	s.lastFailure = now
	action := simscm.Action{Type: plan.RecoveryNone}
	if n := len(s.cfg.RecoveryActions); n > 0 {
		action = s.cfg.RecoveryActions[min(s.failures, n)-1]
	}
	m.log.Warn("simulated service control manager: service terminated unexpectedly",
		"service", s.cfg.Name, "exitCode", code, "failures", s.failures, "recovery", action.Type, "delay", action.Delay)
	if action.Type != plan.RecoveryRestart {
		return
	}
	s.restart = time.AfterFunc(action.Delay, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.down || s.deleted || s.state != simscm.Stopped || m.services[key(s.cfg.Name)] != s {
			return
		}
		s.restart = nil
		if err := m.startLocked(s, map[string]bool{}); err != nil {
			m.log.Warn("simulated service control manager: recovery restart failed", "service", s.cfg.Name, "err", err)
		}
	})
}

// Stop stops a service and returns once its process has ended. It refuses
// while running services depend on it.
func (m *Manager) Stop(ctx context.Context, name string) error {
	m.mu.Lock()
	s, ok := m.services[key(name)]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", simscm.ErrNotFound, name)
	}
	if s.state == simscm.Stopped || s.proc == nil {
		if s.restart != nil { // a pending recovery restart is cancelled
			s.restart.Stop()
			s.restart = nil
		}
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", simscm.ErrNotActive, s.cfg.Name)
	}
	var dependents []string
	for _, o := range m.services {
		if o == s || (o.state != simscm.Running && o.state != simscm.StartPending) {
			continue
		}
		for _, d := range o.cfg.Dependencies {
			if strings.EqualFold(d, s.cfg.Name) {
				dependents = append(dependents, o.cfg.Name)
			}
		}
	}
	if len(dependents) > 0 {
		m.mu.Unlock()
		sort.Strings(dependents)
		return fmt.Errorf("%w: %s is needed by %s", simscm.ErrDependentRunning, s.cfg.Name, strings.Join(dependents, ", "))
	}
	s.state, s.stopping = simscm.StopPending, true
	proc, done := s.proc, s.done
	m.mu.Unlock()
	m.log.Info("simulated service control manager: stopping service", "service", s.cfg.Name)
	return m.terminate(ctx, proc, done)
}

// terminate asks a process group to stop (SIGTERM, the SERVICE_CONTROL_STOP
// of a Linux process), then kills it after StopTimeout.
func (m *Manager) terminate(ctx context.Context, proc *os.Process, done chan struct{}) error {
	_ = winexec.SignalGroup(proc, syscall.SIGTERM)
	timer := time.NewTimer(m.opts.StopTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	_ = winexec.KillGroup(proc)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("simulated service control manager: process %d did not end after SIGKILL", proc.Pid)
	}
}

// Executables lists the files of the programs that running services run,
// as they were when started (Windows keeps such files open: they cannot be
// deleted or replaced, though they can be renamed).
func (m *Manager) Executables() []os.FileInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []os.FileInfo
	for _, s := range m.services {
		if s.proc != nil && s.exe != nil {
			out = append(out, s.exe)
		}
	}
	return out
}

// Crash kills a running service's process as a crash would, so that its
// recovery actions apply.
func (m *Manager) Crash(name string) error {
	m.mu.Lock()
	s, err := m.find(name)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	proc, done := s.proc, s.done
	m.mu.Unlock()
	if proc == nil {
		return fmt.Errorf("%w: %s", simscm.ErrNotActive, name)
	}
	m.log.Info("simulated service control manager: crashing service on request (fault injection)", "service", s.cfg.Name)
	_ = winexec.KillGroup(proc)
	<-done
	return nil
}

// Boot starts the auto-start services (and their dependencies).
func (m *Manager) Boot() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = false
	var names []string
	for k, s := range m.services {
		if s.cfg.StartType == plan.StartAuto && !s.deleted {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		s := m.services[k]
		if s == nil {
			continue
		}
		if err := m.startLocked(s, map[string]bool{}); err != nil {
			m.log.Warn("simulated service control manager: auto-start service failed at boot", "service", s.cfg.Name, "err", err)
		}
	}
}

// Shutdown stops every service as a host shutdown does: each gets a stop
// request, then is killed after a short grace; services marked for deletion
// are removed. Nothing restarts until Boot.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	m.down = true
	type running struct {
		proc *os.Process
		done chan struct{}
	}
	var all []running
	for _, s := range m.services {
		if s.restart != nil {
			s.restart.Stop()
			s.restart = nil
		}
		if s.proc != nil {
			s.state, s.stopping = simscm.StopPending, true
			all = append(all, running{s.proc, s.done})
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_ = m.terminate(ctx, r.proc, r.done)
		}()
	}
	wg.Wait()
	m.mu.Lock()
	for k, s := range m.services {
		if s.deleted {
			delete(m.services, k)
		}
	}
	_ = m.save()
	m.mu.Unlock()
}

// Close shuts the manager down for good.
func (m *Manager) Close() { m.Shutdown() }
