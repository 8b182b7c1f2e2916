package agent

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// ContainerdService is the container runtime's service name.
const ContainerdService = plan.ContainerdService

// Info reports the host facts the operator renders a plan from, and what
// the agent installed (so the operator uploads only changed files).
func (a *Agent) Info(ctx context.Context) (*plan.Info, error) {
	a.startOwnLog(ctx, false)
	facts, err := a.Platform.HostFacts(ctx)
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrHost, Message: "reading the host's facts: " + err.Error()}
	}
	info := &plan.Info{
		SchemaVersion: plan.SchemaVersion,
		Hostname:      facts.Hostname,
		FQDN:          facts.FQDN,
		IPv4:          facts.IPv4,
		DefaultIPv4:   facts.DefaultIPv4,
		OS:            plan.OSInfo{ProductName: facts.ProductName, Build: facts.Build},
		AgentVersion:  a.Version,
	}
	if info.IPv4 == nil {
		info.IPv4 = []string{}
	}
	cfg, state, err := a.Platform.Query(ctx, ContainerdService)
	switch {
	case errors.Is(err, ErrServiceNotFound):
	case err != nil:
		return nil, &plan.Error{Code: plan.ErrService, Service: ContainerdService, Message: err.Error()}
	default:
		info.Containerd = plan.ServiceInfo{Present: true, Running: state == Running, State: string(state),
			Winnode: cfg.Description == plan.ServiceDescription}
		if !info.Containerd.Winnode {
			info.Containerd.Command = cfg.BinaryPathName
		}
	}
	if info.RebootPending, err = a.Platform.RebootPending(ctx); err != nil {
		return nil, &plan.Error{Code: plan.ErrHost, Message: "asking whether a restart is under way: " + err.Error()}
	}
	st, err := a.loadState()
	if msg, untrusted := a.untrustedState(err); untrusted {
		info.Warnings = append(info.Warnings, msg) // st is empty: no installed plan
	} else if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	info.InstalledPlan = st.installedPlan()
	a.forgetMissingFiles(info.InstalledPlan)
	if st.Applied != nil {
		info.Services = a.servicesNotRunning(ctx, st.Applied.Services)
	}
	if a.Preflight != nil {
		a.hostPreflight(ctx, a.Preflight, facts, info)
	}
	return info, nil
}

// servicesNotRunning are the plan's services that are not Running, with
// the end of their log (logFileOf finds it from the service's command
// line): what tells an administrator why, such as the kubelet's "failed to
// parse kubelet flag" after its command line was changed by hand.
func (a *Agent) servicesNotRunning(ctx context.Context, services []plan.Service) []plan.ServiceStatus {
	var out []plan.ServiceStatus
	for _, s := range services {
		_, state, err := a.Platform.Query(ctx, s.Name)
		st := plan.ServiceStatus{Name: s.Name, State: string(state)}
		switch {
		case errors.Is(err, ErrServiceNotFound):
			st.State = "NotInstalled"
		case err != nil:
			st.State = "Unknown: " + err.Error()
		case state == Running:
			continue
		}
		if err == nil {
			st.LogFile, st.LogTail = a.serviceLog(ctx, s.Name)
		}
		out = append(out, st)
	}
	return out
}

// serviceLog is a service's log file and its last lines ("" when it has
// none the agent may read).
func (a *Agent) serviceLog(ctx context.Context, service string) (string, []string) {
	file, err := a.logFileOf(ctx, service)
	if err != nil {
		return "", nil
	}
	local, err := a.Platform.LocalPath(file)
	if err != nil {
		return file.String(), nil
	}
	return file.String(), logTail(local, plan.MaxLogTailLines)
}

// logTail is the last n non-empty lines of the file's last 8 KiB.
func logTail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const window = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, io.SeekStart)
	}
	data, _ := io.ReadAll(io.LimitReader(f, window))
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines[max(0, len(lines)-n):]
}

// forgetMissingFiles leaves out of the installed manifest the files that
// are no longer on disk (deleted by hand, or by a program), so that the
// operator uploads them again and the next apply puts them back, and
// records the size of those that are (InstalledPlan.Sizes). Files are only
// looked up, not hashed: a check must stay cheap.
func (a *Agent) forgetMissingFiles(ip *plan.InstalledPlan) {
	if ip == nil {
		return
	}
	ip.Files = maps.Clone(ip.Files) // the state's own record is left as it is
	ip.Sizes = make(map[string]int64, len(ip.Files))
	for path := range ip.Files {
		wp, err := winpath.Parse(path)
		if err != nil {
			continue
		}
		local, err := a.Platform.LocalPath(wp)
		if err != nil {
			continue
		}
		fi, err := os.Lstat(local)
		switch {
		case errors.Is(err, os.ErrNotExist):
			delete(ip.Files, path)
		case err == nil && fi.Mode().IsRegular():
			ip.Sizes[path] = fi.Size()
		}
	}
}
