package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/winnode/winnode/internal/logfilter"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/svcwrap"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
)

// AgentLogService is the name `logs` reads the agent's own log by.
const AgentLogService = "winnode-agent"

// LogsOptions say which log `logs` reads and how much of it.
type LogsOptions struct {
	// Service is a service's name, or AgentLogService.
	Service string
	// Since and Tail are as `winnodectl logs --since --tail` (-1: all).
	Since time.Duration
	Tail  int
	// From is where in the file to start (a follower's last Size).
	From int64
}

var serviceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$`)

// Logs reads the end of a service's log on this host: the way to a node's
// logs when its kubelet is not there to serve them. Nothing is changed;
// at most plan.MaxLogsBytes of the file is read.
func (a *Agent) Logs(ctx context.Context, o LogsOptions) (*plan.LogsDocument, error) {
	f := logfilter.Options{Since: o.Since, Tail: o.Tail, Now: time.Now()}
	if err := f.Check(); err != nil {
		return nil, plan.Errorf(plan.ErrUsage, "%v", err)
	}
	if !serviceName.MatchString(o.Service) || o.From < 0 {
		return nil, plan.Errorf(plan.ErrUsage, "--service %q is not a service name (letters, digits, - _ .), or --from %d is negative", o.Service, o.From)
	}
	a.startOwnLog(ctx, false)
	file, err := a.logFileOf(ctx, o.Service)
	if err != nil {
		return nil, err
	}
	doc, err := a.readLog(file, o.From)
	if err != nil {
		return nil, err
	}
	doc.Service = o.Service
	doc.Text = logfilter.Filter(doc.Text, f)
	return doc, nil
}

// logFileOf is where a service logs: hybrid-overlay-node's --logfile, or
// the --log-file of winnode-service.exe, in its installed command line, else
// C:\var\log\<service>\<service>.log. It must be in a log folder: under
// C:\var\log, or a log folder of the applied plan (the bootstrap's).
func (a *Agent) logFileOf(ctx context.Context, service string) (winpath.Path, error) {
	file := plan.LogFile(service)
	if service != AgentLogService {
		cfg, _, err := a.Platform.Query(ctx, service)
		switch {
		case err == nil:
			if f := logFileInCommandLine(cfg.BinaryPathName); f != "" {
				file = f
			}
		case !errors.Is(err, ErrServiceNotFound):
			return winpath.Path{}, &plan.Error{Code: plan.ErrService, Service: service, Message: err.Error()}
		}
	}
	p, err := winpath.Parse(file)
	if err != nil || !plan.Within(file, a.logFolders()) {
		return winpath.Path{}, &plan.Error{Code: plan.ErrFileMissing, Service: service, File: file,
			Message: fmt.Sprintf("service %s logs to %s, which is not in a log folder (%s): the agent reads logs only there", service, file, strings.Join(a.logFolders(), ", "))}
	}
	return p, nil
}

// logFileInCommandLine is the log file a service's command line names:
// a --logfile flag of its program (hybrid-overlay-node writes its own log,
// wrapped or not), else winnode-service.exe's --log-file.
func logFileInCommandLine(cmdline string) string {
	args := wincmd.Split(cmdline)
	if len(args) < 2 {
		return ""
	}
	if !isWrapper(args[0]) {
		return logfileFlag(args[1:])
	}
	c, _, err := svcwrap.Parse(args[1:])
	if err != nil {
		return ""
	}
	if f := logfileFlag(c.Args); f != "" {
		return f
	}
	return c.LogFile
}

// logfileFlag is the value of a --logfile flag among args, "" if none.
func logfileFlag(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--logfile" || args[i] == "-logfile" {
			return args[i+1]
		}
	}
	return ""
}

// logFolders are where logs may be read: C:\var\log, and the log folders
// of the applied plan.
func (a *Agent) logFolders() []string {
	folders := []string{plan.LogRoot}
	if st, err := a.loadState(); err == nil && st.Applied != nil {
		for _, d := range st.Applied.Directories {
			if d.Logs {
				folders = append(folders, d.Path)
			}
		}
	}
	return folders
}

// readLog reads file from `from` on (from 0 when the file is now smaller:
// it was rotated), at most plan.MaxLogsBytes, the end; a first line cut
// by that bound is left out.
func (a *Agent) readLog(file winpath.Path, from int64) (*plan.LogsDocument, error) {
	local, err := a.Platform.LocalPath(file)
	if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	missing := func(err error) error {
		return &plan.Error{Code: plan.ErrFileMissing, File: file.String(), Message: fmt.Sprintf("log file %s cannot be read: %v", file, err)}
	}
	f, err := os.Open(local)
	if err != nil {
		return nil, missing(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, missing(fmt.Errorf("not a file (%v)", err))
	}
	doc := &plan.LogsDocument{SchemaVersion: plan.SchemaVersion, File: file.String(), Size: fi.Size()}
	if from > doc.Size {
		from = 0
	}
	doc.Offset = max(from, doc.Size-plan.MaxLogsBytes)
	doc.Truncated = doc.Offset > from
	data, err := io.ReadAll(io.NewSectionReader(f, doc.Offset, doc.Size-doc.Offset))
	if err != nil {
		return nil, missing(err)
	}
	if doc.Truncated {
		if i := strings.IndexByte(string(data), '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	doc.Text = string(data)
	if backups, err := logrotate.Backups(local); err == nil {
		for _, b := range backups {
			doc.Rotated = append(doc.Rotated, filepath.Base(b))
		}
	}
	return doc, nil
}
