package agent

import (
	"context"
	"time"
)

// HostSettings is what apply sets on a host beyond files, services and the
// firewall, each through the API Windows documents for it
// (platform_windows_host.go) or the simulated host's (platform_sim_host.go).
type HostSettings interface {
	// WindowsFeature reports an optional feature's state (an error
	// matching ErrFeatureUnknown when Windows has no such feature).
	// EnableWindowsFeature enables it and says whether Windows must
	// restart to finish.
	WindowsFeature(ctx context.Context, name string) (FeatureState, error)
	EnableWindowsFeature(ctx context.Context, name string) (restart bool, err error)
	// Reboot restarts the host after delay, giving reason; until the host
	// is back, RebootPending says a restart is under way.
	Reboot(ctx context.Context, reason string, delay time.Duration) error
	RebootPending(ctx context.Context) (bool, error)
	// DefenderRunning says whether Microsoft Defender Antivirus runs.
	// Add and RemoveDefenderExclusion set and clear a process exclusion
	// (idempotent).
	DefenderRunning(ctx context.Context) (bool, error)
	AddDefenderExclusion(ctx context.Context, program string) error
	RemoveDefenderExclusion(ctx context.Context, program string) error
	// AddRootCertificate puts a DER certificate into the machine's
	// Trusted Root store (LocalMachine\Root) and returns its SHA-1
	// thumbprint (lower-case hex) and whether it was not there before.
	// RemoveRootCertificate deletes one by thumbprint (no error if absent).
	AddRootCertificate(ctx context.Context, der []byte) (thumbprint string, added bool, err error)
	RemoveRootCertificate(ctx context.Context, thumbprint string) error
	// PipeAnswers says whether a local named pipe (\\.\pipe\NAME) accepts
	// a connection now: nil, or why not.
	PipeAnswers(ctx context.Context, name string) error
}

// FeatureState is an optional feature's state, reduced to what apply acts
// on (DISM's DismPackageFeatureState).
type FeatureState string

const (
	FeatureEnabled       FeatureState = "Enabled"
	FeatureEnablePending FeatureState = "EnablePending" // enabled; Windows restarts to finish
	FeatureDisabled      FeatureState = "Disabled"
)

// RebootDelay is how long after `winnode-agent reboot` the host restarts:
// time for the agent's answer to reach the operator before SSH goes down.
const RebootDelay = 3 * time.Second
