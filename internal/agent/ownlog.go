package agent

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/svcwrap"
	"github.com/winnode/winnode/internal/winpath"
)

// OwnLog is the agent's own log, C:\var\log\winnode-agent\winnode-agent.log:
// every run's log lines (they also go to stderr, to the operator), rotated
// at the limits the plan gives its services. Lines are held in memory
// until the run knows the folder is safe to write: an administrator (the
// agent) appending to a file in a folder a local user created could be
// made to write through a link the user planted. So the folder must be
// one the agent secured: secured by this run (install, apply, remove), or
// found owned by Administrators with winnode's DACL, everything in it
// owned by administrators (info, logs). Otherwise the lines go to stderr
// only.
type OwnLog struct {
	mu   sync.Mutex
	held bytes.Buffer
	file *logrotate.File
	off  bool // no file this run: held lines are dropped
}

// maxHeld bounds the lines held before the file is opened.
const maxHeld = 1 << 20

// Write keeps p for the log file: written there once open, else held.
func (l *OwnLog) Write(p []byte) (int, error) {
	if l == nil {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.file != nil:
		_, _ = l.file.Write(p) // the log must never fail the agent's command
	case !l.off && l.held.Len()+len(p) <= maxHeld:
		l.held.Write(p)
	}
	return len(p), nil
}

// Close closes the file; lines held until now are dropped.
func (l *OwnLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.off = true
	l.held.Reset()
	if l.file != nil {
		return l.file.Close()
	}
	return nil
}

// attach opens the log file and writes the held lines there.
func (l *OwnLog) attach(local string, limits logrotate.Limits) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil || l.off {
		return nil
	}
	f, err := logrotate.Open(local, limits, nil)
	if err != nil {
		return err
	}
	l.file = f
	_, _ = f.Write(l.held.Bytes())
	l.held.Reset()
	return nil
}

// startOwnLog opens the agent's own log when its folder is safe to write:
// secured says this run has just secured winnode's folders (it is then);
// otherwise the folder must exist with the owner and DACL the agent gives
// it and hold nothing a user owns. Failures only leave the log off.
func (a *Agent) startOwnLog(ctx context.Context, secured bool) {
	if a.OwnLog == nil {
		return
	}
	dir, _ := winpath.Parse(plan.AgentLogDir)
	if !secured && !a.securedFolder(ctx, dir) {
		return
	}
	local, err := a.Platform.LocalPath(dir.Join(strings.TrimPrefix(plan.AgentLogFile, plan.AgentLogDir+`\`)))
	if err == nil {
		err = a.OwnLog.attach(local, a.ownLogLimits())
	}
	if err != nil {
		a.logger().Warn("the agent's own log stays off for this run", "file", plan.AgentLogFile, "err", err)
	}
}

// securedFolder: dir exists, is owned by Administrators with winnode's
// DACL, and what is in it is owned by an administrator.
func (a *Agent) securedFolder(ctx context.Context, dir winpath.Path) bool {
	owner, dacl, err := a.Platform.Security(ctx, dir)
	if err != nil || !strings.EqualFold(owner, sidAdministrators) || !sameDACL(dacl, rootDACL) {
		return false
	}
	self, err := a.Platform.RunningAs(ctx)
	if err != nil {
		return false
	}
	return a.checkOwners(ctx, []winpath.Path{dir}, "", append(slices.Clone(trustedOwners), self)) == nil
}

// ownLogLimits are the limits the applied plan gives its services (read
// from a winnode-service.exe command line), else the defaults.
func (a *Agent) ownLogLimits() logrotate.Limits {
	st, err := a.loadState()
	if err != nil || st.Applied == nil {
		return logrotate.Defaults
	}
	for _, s := range st.Applied.Services {
		if len(s.Args) == 0 || !isWrapper(s.Binary) {
			continue
		}
		if c, _, err := svcwrap.Parse(s.Args); err == nil && c.LogFile != "" {
			return c.Limits()
		}
	}
	return logrotate.Defaults
}

// logger is a.Log, or a logger that discards.
func (a *Agent) logger() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// isWrapper says whether a service's program is winnode-service.exe.
func isWrapper(program string) bool {
	base := program[strings.LastIndexAny(program, `\/`)+1:]
	return strings.EqualFold(base, plan.PayloadService)
}
