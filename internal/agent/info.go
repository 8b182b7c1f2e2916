package agent

import (
	"context"
	"errors"
	"maps"
	"os"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// ContainerdService is the container runtime's service name.
const ContainerdService = "containerd"

// Info reports the host facts the operator renders a plan from, and what
// the agent installed (so the operator uploads only changed files).
func (a *Agent) Info(ctx context.Context) (*plan.Info, error) {
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
	_, state, err := a.Platform.Query(ctx, ContainerdService)
	switch {
	case errors.Is(err, ErrServiceNotFound):
	case err != nil:
		return nil, &plan.Error{Code: plan.ErrService, Service: ContainerdService, Message: err.Error()}
	default:
		info.Containerd = plan.ServiceInfo{Present: true, Running: state == Running, State: string(state)}
	}
	st, err := a.loadState()
	if msg, untrusted := a.untrustedState(err); untrusted {
		info.Warnings = append(info.Warnings, msg) // st is empty: no installed plan
	} else if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	info.InstalledPlan = st.installedPlan()
	a.forgetMissingFiles(info.InstalledPlan)
	return info, nil
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
