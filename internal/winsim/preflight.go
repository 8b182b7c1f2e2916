package winsim

import (
	"time"

	"github.com/winnode/winnode/internal/simscm"
)

// What a simulated host reports to the pre-flight checks (issue 28): its
// patch level, free space on C:, clock, a restart Windows waits for, its
// route to the API server and whether DHCP gave its address. Kept in
// settings.json, set from Options on a new host (or by a non-zero Option
// on a saved one), and changed on the running host by the setters below,
// so a test can break a host and fix it again.

// DefaultFreeDiskGiB is a simulated host's free space on C: by default: a
// 127 GiB disk (Azure's and Hyper-V's default OS disk) with Windows
// installed.
const DefaultFreeDiskGiB = 100

// defaultUBR is a recent update build revision of each build (Windows
// Server 2019: 17763.6893, February 2025; 2022: 20348.3207, same month).
var defaultUBR = map[string]int{"10.0.17763": 6893, "10.0.20348": 3207}

// system is the settings the pre-flight checks read.
type system struct {
	UBR           int           `json:"ubr"`
	FreeDiskGiB   int           `json:"freeDiskGiB"`
	ClockOffset   time.Duration `json:"clockOffset,omitempty"`
	NoAPIRoute    bool          `json:"noAPIRoute,omitempty"`
	DHCP          bool          `json:"dhcp,omitempty"`
	PendingReboot bool          `json:"pendingReboot,omitempty"`
	// KubeletPortBlocked: a network firewall outside the host (a security
	// group, a network security group, a firewall appliance) rejects
	// connections to the kubelet's port; winnode's rule on the host is
	// open. The stand-in kubelet resets them (kubeletapi.go).
	KubeletPortBlocked bool `json:"kubeletPortBlocked,omitempty"`
}

// applySystemOptions sets a host's system from its Options: defaults on a
// new host, and what the Options set.
func (s *settings) applySystemOptions(o Options, build string) {
	if s.System.UBR == 0 {
		s.System.UBR = defaultUBR[build]
	}
	if s.System.FreeDiskGiB == 0 {
		s.System.FreeDiskGiB = DefaultFreeDiskGiB
	}
	if o.UBR != 0 {
		s.System.UBR = o.UBR
	}
	if o.FreeDiskGiB != 0 {
		s.System.FreeDiskGiB = o.FreeDiskGiB
	}
	if o.ClockOffset != 0 {
		s.System.ClockOffset = o.ClockOffset
	}
	s.System.NoAPIRoute = s.System.NoAPIRoute || o.NoAPIRoute
	s.System.DHCP = s.System.DHCP || o.DHCP
	s.System.PendingReboot = s.System.PendingReboot || o.PendingReboot
	s.System.KubeletPortBlocked = s.System.KubeletPortBlocked || o.KubeletPortBlocked
}

// systemNow is the system as the host API reports it.
func (s *settings) systemNow() system {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.System
}

// withSystem adds the system's facts to a HostInfo.
func withSystem(hi simscm.HostInfo, sys system) simscm.HostInfo {
	hi.UBR = sys.UBR
	hi.FreeDiskBytes = uint64(sys.FreeDiskGiB) << 30
	hi.ClockOffset = sys.ClockOffset
	hi.NoAPIRoute = sys.NoAPIRoute
	hi.UpdateRebootPending = sys.PendingReboot
	hi.KubeletPortBlocked = sys.KubeletPortBlocked
	if sys.DHCP {
		hi.DHCPv4 = append([]string(nil), hi.IPv4...)
	}
	return hi
}

// setSystem changes the system and saves it, logging what changed.
func (h *Host) setSystem(what string, value any, change func(*system)) {
	s := h.settings
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.System)
	if err := s.save(); err != nil {
		h.log.Warn("simulated: saving the host's settings failed", "err", err)
	}
	h.log.Info("simulated: host changed", what, value)
}

// SetFreeDiskGiB sets the free space on C:.
func (h *Host) SetFreeDiskGiB(n int) {
	h.setSystem("freeDiskGiB", n, func(s *system) { s.FreeDiskGiB = n })
}

// SetClockOffset moves the host's clock from this machine's.
func (h *Host) SetClockOffset(d time.Duration) {
	h.setSystem("clockOffset", d, func(s *system) { s.ClockOffset = d })
}

// SetNoAPIRoute cuts (true) or restores the host's route to the API server.
func (h *Host) SetNoAPIRoute(cut bool) {
	h.setSystem("noAPIRoute", cut, func(s *system) { s.NoAPIRoute = cut })
}

// SetDHCP says whether the host's address is a DHCP lease.
func (h *Host) SetDHCP(dhcp bool) {
	h.setSystem("dhcp", dhcp, func(s *system) { s.DHCP = dhcp })
}

// SetKubeletPortBlocked puts (true) or takes away a network firewall
// outside the host that rejects connections to the kubelet's port.
func (h *Host) SetKubeletPortBlocked(blocked bool) {
	h.setSystem("kubeletPortBlocked", blocked, func(s *system) { s.KubeletPortBlocked = blocked })
}

// SetUBR installs (or uninstalls) updates: the update build revision.
func (h *Host) SetUBR(ubr int) {
	h.setSystem("ubr", ubr, func(s *system) { s.UBR = ubr })
}

// SetPendingReboot makes Windows wait for a restart (an update installed);
// the next Reboot clears it.
func (h *Host) SetPendingReboot(pending bool) {
	h.setSystem("pendingReboot", pending, func(s *system) { s.PendingReboot = pending })
}

// ClockOffset is how far the host's clock is from this machine's (the
// stand-in kubelet reads it through the host API: simscm.HostInfo).
func (h *Host) ClockOffset() time.Duration { return h.settings.systemNow().ClockOffset }

// UBR is the host's update build revision.
func (h *Host) UBR() int { return h.settings.systemNow().UBR }
