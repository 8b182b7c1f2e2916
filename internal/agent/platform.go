// Package agent is what winnode-agent does on a Windows host: apply a plan
// (files, folders, Windows services, firewall ports), remove everything it
// installed, report host facts, and bootstrap a kubelet from worker Ignition.
//
// Everything that differs between a real Windows host and a winsim simulated
// host sits behind one seam, Platform, with two implementations: the Windows
// one (platform_windows.go, golang.org/x/sys/windows/svc/mgr) and the
// simulated one (platform_sim.go, the simulator's service control manager),
// chosen by Open. No other code asks which one it runs on.
package agent

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// Platform is the host as the agent sees it.
type Platform interface {
	ServiceManager
	// LocalPath maps a Windows host path to the path this process opens:
	// the same path on Windows, a file under the simulated root on winsim.
	LocalPath(p winpath.Path) (string, error)
	// HostFacts reports what the OS says about the host.
	HostFacts(ctx context.Context) (HostFacts, error)
	// OpenFirewallPort allows inbound traffic to a port (idempotent);
	// CloseFirewallPort removes the rule (no error if absent).
	OpenFirewallPort(ctx context.Context, fw plan.FirewallPort) error
	CloseFirewallPort(ctx context.Context, fw plan.FirewallPort) error
	// Security returns a path's owner (a SID, "S-1-5-32-544") and its DACL
	// in SDDL ("D:P(A;OICI;FA;;;SY)..."). SetSecurity gives an existing
	// path that owner and a protected DACL, which Windows propagates to
	// what is below it. See secure.go.
	Security(ctx context.Context, p winpath.Path) (owner, dacl string, err error)
	SetSecurity(ctx context.Context, p winpath.Path, owner, dacl string) error
	// RunningAs returns the SID of the account the agent runs as. The agent
	// runs elevated, as an administrator, so what that account owns is
	// trusted as what Administrators own is (see secure.go).
	RunningAs(ctx context.Context) (string, error)
	// HostSettings: Windows features, restarts, Defender, the Root store,
	// named pipes (hostsettings.go).
	HostSettings
	// SystemDriveFree is the space free on the system drive (C:), in
	// bytes, for the agent's account (GetDiskFreeSpaceEx).
	SystemDriveFree(ctx context.Context) (uint64, error)
	// Clock is the host's clock.
	Clock(ctx context.Context) (time.Time, error)
	// Dial opens a TCP connection from the host (the pre-flight check of
	// the API server: preflight.go).
	Dial(ctx context.Context, address string) (net.Conn, error)
	// Close releases the connection to the service manager.
	Close() error
}

// ServiceManager is the service control manager: Windows' or the
// simulator's. Names are compared case-insensitively, as Windows does.
type ServiceManager interface {
	// Query returns a service's configuration and state, or an error
	// matching ErrServiceNotFound.
	Query(ctx context.Context, name string) (ServiceConfig, ServiceState, error)
	// Create installs a service (stopped); Update changes its configuration
	// (not its state), recovery actions and environment included.
	Create(ctx context.Context, c ServiceConfig) error
	Update(ctx context.Context, c ServiceConfig) error
	// Start asks the service to start: no error if it already runs. Stop
	// asks it to stop: no error if it is not running; it fails while
	// running services depend on it. Neither waits for the new state.
	Start(ctx context.Context, name string) error
	Stop(ctx context.Context, name string) error
	// Delete uninstalls a service (Windows finishes once it has stopped).
	Delete(ctx context.Context, name string) error
	// Dependents lists the installed services that depend on this one
	// directly.
	Dependents(ctx context.Context, name string) ([]string, error)
}

// ErrServiceNotFound is what Query returns for a service that is not
// installed (ERROR_SERVICE_DOES_NOT_EXIST).
var ErrServiceNotFound = errors.New("service not installed")

// ServiceState is a service's state, named as Windows names them.
type ServiceState string

const (
	Stopped      ServiceState = "Stopped"
	StartPending ServiceState = "StartPending"
	Running      ServiceState = "Running"
	StopPending  ServiceState = "StopPending"
)

// ServiceConfig is what the service manager stores about a service, in the
// form the agent compares: two configs are equal when the service needs no
// change.
type ServiceConfig struct {
	Name        string
	DisplayName string
	Description string
	// BinaryPathName is the whole command line (wincmd.Join).
	BinaryPathName string
	Dependencies   []string
	StartType      plan.StartType
	// Environment is "NAME=value" entries, sorted.
	Environment []string
	// RecoveryActions: Windows keeps delays in milliseconds and the reset
	// period in seconds, so desired configs are rounded the same way.
	RecoveryActions []RecoveryAction
	ResetPeriod     time.Duration
	// RecoveryUnknown is set by a service manager that can store recovery
	// actions but not report them (Wine's lacks that query); they are then
	// written on every create and update but not compared.
	RecoveryUnknown bool
}

// RecoveryAction is one failure action.
type RecoveryAction struct {
	Type  plan.RecoveryActionType
	Delay time.Duration
}

// HostFacts are what the OS reports about the host.
type HostFacts struct {
	Hostname    string
	FQDN        string
	IPv4        []string
	DefaultIPv4 string
	ProductName string
	Build       string
	// UBR is the update build revision (20348.681: 681).
	UBR int
	// DHCPv4 are the IPv4 addresses among IPv4 that DHCP gave.
	DHCPv4 []string
	// UpdateRebootPending: Windows waits for a restart to finish
	// installing updates or components (Component Based Servicing's
	// RebootPending key, Windows Update's RebootRequired key).
	UpdateRebootPending bool
}
