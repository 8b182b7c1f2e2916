//go:build !windows

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/winnode/winnode/internal/simscm"
)

// The simulated host keeps its features, Defender and Root store behind
// its API (internal/simscm hostsettings.go), and its named pipes as Unix
// sockets beside it.

// ErrFeatureUnknown: Windows has no optional feature of that name.
var ErrFeatureUnknown = simscm.ErrFeatureNotFound

func (s *simulated) WindowsFeature(ctx context.Context, name string) (FeatureState, error) {
	f, err := s.scm.Feature(ctx, name)
	return FeatureState(f.State), err
}

func (s *simulated) EnableWindowsFeature(ctx context.Context, name string) (bool, error) {
	f, err := s.scm.EnableFeature(ctx, name)
	return f.State == simscm.FeatureEnablePending, err
}

func (s *simulated) Reboot(ctx context.Context, reason string, delay time.Duration) error {
	return s.scm.Reboot(ctx, simscm.Reboot{Reason: reason, Delay: delay})
}

func (s *simulated) RebootPending(ctx context.Context) (bool, error) {
	r, err := s.scm.RebootState(ctx)
	return r.Pending, err
}

func (s *simulated) DefenderRunning(ctx context.Context) (bool, error) {
	d, err := s.scm.Defender(ctx)
	return d.Running, err
}

func (s *simulated) AddDefenderExclusion(ctx context.Context, program string) error {
	return s.scm.AddDefenderExclusion(ctx, program)
}

func (s *simulated) RemoveDefenderExclusion(ctx context.Context, program string) error {
	return s.scm.RemoveDefenderExclusion(ctx, program)
}

func (s *simulated) AddRootCertificate(ctx context.Context, der []byte) (string, bool, error) {
	a, err := s.scm.AddRootCertificate(ctx, der)
	return a.Thumbprint, a.Added, err
}

func (s *simulated) RemoveRootCertificate(ctx context.Context, thumbprint string) error {
	return s.scm.RemoveRootCertificate(ctx, thumbprint)
}

func (s *simulated) PipeAnswers(ctx context.Context, name string) error {
	if s.sock == "" {
		return errors.New("the simulated host's socket is unknown")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", simscm.PipePath(s.sock, name))
	if err != nil {
		// What opening a pipe nobody serves gives on Windows.
		return fmt.Errorf("open %s: The system cannot find the file specified. (simulated: %v)", name, err)
	}
	return c.Close()
}

// SystemDriveFree is the simulated host's free space (winsim
// --free-disk-gib), not the Linux disk's.
func (s *simulated) SystemDriveFree(ctx context.Context) (uint64, error) {
	h, err := s.scm.Host(ctx)
	return h.FreeDiskBytes, err
}

// Clock is this machine's clock moved by the simulated host's offset
// (winsim --clock-offset).
func (s *simulated) Clock(ctx context.Context) (time.Time, error) {
	h, err := s.scm.Host(ctx)
	return time.Now().Add(h.ClockOffset), err
}

// Dial connects as the host would. A simulated host without a route to the
// API server (winsim --no-api-route) fails as Windows does when the SYN
// goes unanswered: WSAETIMEDOUT (10060) from connect, after the attempt
// times out (here at once, or when ctx ends first, so tests do not wait).
func (s *simulated) Dial(ctx context.Context, address string) (net.Conn, error) {
	h, err := s.scm.Host(ctx)
	if err != nil {
		return nil, err
	}
	if h.NoAPIRoute {
		return nil, fmt.Errorf("dial tcp %s: connectex: A connection attempt failed because the connected party did not properly respond after a period of time, or established connection failed because connected host has failed to respond. (simulated: no route to the API server)", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", address)
}
