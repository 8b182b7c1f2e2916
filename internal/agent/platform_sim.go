//go:build !windows

// The simulated platform is built only for Linux (and other non-Windows
// systems): winsim hosts run the agent's Linux build. It is a client of the
// simulated service control manager through package simscm, the API's
// types and client only; the simulator itself (internal/winsim) is never
// linked into the agent.

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winpath"
)

// simulated is the Platform of a winsim simulated host: services through the
// simulator's service control manager, C:\ mapped onto a Linux folder.
type simulated struct {
	scm  *simscm.Client
	root string
	sock string // the API's socket: named pipes are sockets beside it
}

func openSimulated(sock, root string) (Platform, error) {
	p := &simulated{scm: simscm.Dial(sock), root: root, sock: sock}
	return p, nil
}

// NewSimulated returns the platform of a simulated host whose service
// control manager is client and whose C:\ is the Linux folder root.
func NewSimulated(client *simscm.Client, root string) Platform {
	return &simulated{scm: client, root: root}
}

func (s *simulated) Close() error { return nil }

func (s *simulated) LocalPath(p winpath.Path) (string, error) { return winpath.Resolve(s.root, p) }

func (s *simulated) HostFacts(ctx context.Context) (HostFacts, error) {
	h, err := s.scm.Host(ctx)
	if err != nil {
		return HostFacts{}, err
	}
	return HostFacts{Hostname: h.Hostname, FQDN: h.FQDN, IPv4: h.IPv4, DefaultIPv4: h.DefaultIPv4, ProductName: h.ProductName, Build: h.Build,
		UBR: h.UBR, DHCPv4: h.DHCPv4, UpdateRebootPending: h.UpdateRebootPending}, nil
}

func (s *simulated) Query(ctx context.Context, name string) (ServiceConfig, ServiceState, error) {
	svc, err := s.scm.Get(ctx, name)
	if errors.Is(err, simscm.ErrNotFound) {
		return ServiceConfig{}, "", fmt.Errorf("service %s: %w", name, ErrServiceNotFound)
	}
	if err != nil {
		return ServiceConfig{}, "", err
	}
	c := svc.Config
	out := ServiceConfig{
		Name: c.Name, DisplayName: c.DisplayName, Description: c.Description,
		BinaryPathName: c.BinaryPathName, Dependencies: c.Dependencies,
		StartType: c.StartType, Environment: c.Environment, ResetPeriod: c.ResetPeriod,
	}
	for _, a := range c.RecoveryActions {
		out.RecoveryActions = append(out.RecoveryActions, RecoveryAction{Type: a.Type, Delay: a.Delay})
	}
	return out, ServiceState(svc.Status.State), nil
}

func toSCM(c ServiceConfig) simscm.Config {
	out := simscm.Config{
		Name: c.Name, DisplayName: c.DisplayName, Description: c.Description,
		BinaryPathName: c.BinaryPathName, Dependencies: c.Dependencies,
		StartType: c.StartType, Environment: c.Environment, ResetPeriod: c.ResetPeriod,
	}
	for _, a := range c.RecoveryActions {
		out.RecoveryActions = append(out.RecoveryActions, simscm.Action{Type: a.Type, Delay: a.Delay})
	}
	return out
}

func (s *simulated) Create(ctx context.Context, c ServiceConfig) error {
	return s.scm.Create(ctx, toSCM(c))
}

func (s *simulated) Update(ctx context.Context, c ServiceConfig) error {
	return s.scm.Update(ctx, toSCM(c))
}

func (s *simulated) Start(ctx context.Context, name string) error {
	return s.scm.Start(ctx, name)
}

func (s *simulated) Stop(ctx context.Context, name string) error {
	err := s.scm.Stop(ctx, name)
	if errors.Is(err, simscm.ErrNotActive) {
		return nil
	}
	return err
}

func (s *simulated) Delete(ctx context.Context, name string) error {
	err := s.scm.Delete(ctx, name)
	if errors.Is(err, simscm.ErrNotFound) {
		return nil
	}
	return err
}

func (s *simulated) Dependents(ctx context.Context, name string) ([]string, error) {
	all, err := s.scm.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, st := range all {
		svc, err := s.scm.Get(ctx, st.Name)
		if errors.Is(err, simscm.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(svc.Config.Dependencies, func(d string) bool { return strings.EqualFold(d, name) }) {
			out = append(out, svc.Config.Name)
		}
	}
	return out, nil
}

// The simulated host has no firewall. Its rules are recorded in a file of
// the simulated filesystem, so tests can see which ports a plan opened; the
// file disappears with the last rule.
var simFirewallFile = winpath.Path{Drive: "C", Parts: []string{"ProgramData", "winsim", "firewall-simulated.json"}}

func (s *simulated) OpenFirewallPort(_ context.Context, fw plan.FirewallPort) error {
	return s.editFirewall(func(rules map[string]plan.FirewallPort) { rules[fw.Name] = fw })
}

func (s *simulated) CloseFirewallPort(_ context.Context, fw plan.FirewallPort) error {
	return s.editFirewall(func(rules map[string]plan.FirewallPort) { delete(rules, fw.Name) })
}

func (s *simulated) editFirewall(edit func(map[string]plan.FirewallPort)) error {
	path, err := s.LocalPath(simFirewallFile)
	if err != nil {
		return err
	}
	rules := map[string]plan.FirewallPort{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &rules); err != nil {
			return fmt.Errorf("simulated firewall %s: %w", simFirewallFile, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("simulated firewall: %w", err)
	}
	edit(rules)
	if len(rules) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("simulated firewall: %w", err)
		}
		os.Remove(filepath.Dir(path)) // only if empty
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("simulated firewall: %w", err)
	}
	data, _ = json.MarshalIndent(rules, "", "  ")
	return writeFileAtomic(path, data)
}

func (s *simulated) Security(ctx context.Context, p winpath.Path) (string, string, error) {
	sec, err := s.scm.Security(ctx, p.String())
	if errors.Is(err, simscm.ErrFileNotFound) {
		return "", "", fmt.Errorf("%s: %w", p, os.ErrNotExist)
	}
	return sec.Owner, sec.DACL, err
}

func (s *simulated) SetSecurity(ctx context.Context, p winpath.Path, owner, dacl string) error {
	return s.scm.SetSecurity(ctx, p.String(), simscm.Security{Owner: owner, DACL: dacl})
}

// RunningAs: on a winsim host the agent runs as the simulated
// Administrator, whose files the simulator records as owned by the
// Administrators group, as Windows does for an elevated administrator
// (its token's default owner).
func (s *simulated) RunningAs(context.Context) (string, error) { return sidAdministrators, nil }
