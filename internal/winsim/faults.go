package winsim

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/crypto/ssh"
)

// Faults on demand. Each one logs what it does, so a test's output tells
// which failure the simulated host was put through.

// Reboot restarts the host as Windows does: SSH sessions drop, every
// program started over SSH ends, the services get a stop request and end,
// the host stays unreachable for Options.BootDelay, then SSH comes back and
// the auto-start services start. It returns once the host is up again.
func (h *Host) Reboot() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return fmt.Errorf("simulated host %s: closed", h.id.Hostname)
	}
	h.mu.Unlock()
	h.log.Info("simulated host: rebooting (fault injection)", "downFor", h.opts.BootDelay)
	h.shutdown()
	time.Sleep(h.opts.BootDelay)
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return fmt.Errorf("simulated host %s: closed during reboot", h.id.Hostname)
	}
	if err := h.applyPendingRename(); err != nil {
		return err
	}
	if err := h.boot(); err != nil {
		return fmt.Errorf("simulated host %s: booting after reboot: %w", h.id.Hostname, err)
	}
	h.log.Info("simulated host: rebooted", "address", h.Addr())
	return nil
}

// CrashService kills a running service's process as a crash would; the
// service's recovery actions then apply.
func (h *Host) CrashService(name string) error {
	return h.scm.Crash(name)
}

// RotateHostKey replaces the host key (as reinstalling OpenSSH would) and
// returns the new public key. Connections made from now on see the new key.
func (h *Host) RotateHostKey() (ssh.PublicKey, error) {
	if err := h.newHostKey(); err != nil {
		return nil, err
	}
	h.log.Info("simulated host: host key rotated (fault injection)", "hostKey", h.Fingerprint())
	return h.HostKey(), nil
}

// CloneHostKeysOf gives the host other's SSH host key, as a VM cloned from
// other's disk without generalizing it keeps the key files of
// C:\ProgramData\ssh. Connections made from now on see that key.
func (h *Host) CloneHostKeysOf(other *Host) error {
	for _, suffix := range []string{"", ".pub"} {
		src, err := other.Path(HostKeyPath + suffix)
		if err != nil {
			return err
		}
		dst, err := h.Path(HostKeyPath + suffix)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("simulated host %s: reading %s's host key: %w", h.id.Hostname, other.id.Hostname, err)
		}
		if err := writeFileAtomic(dst, data, 0o600); err != nil {
			return fmt.Errorf("simulated host %s: writing the cloned host key: %w", h.id.Hostname, err)
		}
	}
	if err := h.loadHostKey(); err != nil {
		return err
	}
	h.log.Info("simulated host: host key cloned (fault injection)", "from", other.id.Hostname, "hostKey", h.Fingerprint())
	return nil
}

// RenameComputer gives the host a new computer name from its next
// restart, as Rename-Computer without -Restart does (Microsoft documents
// that the new name takes effect only after the computer restarts): until
// Reboot, the host keeps reporting its old name.
func (h *Host) RenameComputer(name string) error {
	if !netbiosName.MatchString(name) {
		return fmt.Errorf("simulated host %s: Rename-Computer %q: not a valid computer name (1-15 letters, digits or hyphens)", h.id.Hostname, name)
	}
	h.mu.Lock()
	h.pendingHostname = name
	h.mu.Unlock()
	h.log.Info("simulated host: computer renamed, effective at the next restart (fault injection)", "newName", name)
	return nil
}

// applyPendingRename makes a pending RenameComputer the host's name; the
// host is down (Reboot calls it between shutdown and boot).
func (h *Host) applyPendingRename() error {
	h.mu.Lock()
	name := h.pendingHostname
	h.pendingHostname = ""
	h.mu.Unlock()
	if name == "" {
		return nil
	}
	return h.rename(name)
}

// PowerOff takes the host down until PowerOn: connections drop, every
// process ends, and the SSH port refuses connections.
func (h *Host) PowerOff() {
	h.log.Info("simulated host: powered off (fault injection)")
	h.shutdown()
}

// PowerOn boots a host that PowerOff took down.
func (h *Host) PowerOn() error {
	h.mu.Lock()
	closed, up := h.closed, h.up
	h.mu.Unlock()
	if closed {
		return fmt.Errorf("simulated host %s: closed", h.id.Hostname)
	}
	if up {
		return nil
	}
	if err := h.boot(); err != nil {
		return fmt.Errorf("simulated host %s: power on: %w", h.id.Hostname, err)
	}
	h.log.Info("simulated host: powered on", "address", h.Addr())
	return nil
}

// ServiceLog returns what a service wrote to its standard output and error
// (C:\ProgramData\winsim\logs\<name>.log), for tests and diagnostics.
func (h *Host) ServiceLog(name string) (string, error) {
	p, err := h.Path(h.scm.LogPath(name))
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("simulated host %s: log of service %s: %w", h.id.Hostname, name, err)
	}
	return string(data), nil
}
