package winsim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/acl"
)

// RunUserData runs a machine's user data as a cloud's launch agent does at
// first boot (simulated); call it before Start. Two forms are scripts:
//
//   - PowerShell between <powershell> and </powershell>, which EC2Launch,
//     cloudbase-init and Azure's custom data run ("Run commands when you
//     launch an EC2 instance with user data input",
//     https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html);
//   - PowerShell whose first line is #ps1_sysnative (or #ps1_x86), which
//     cloudbase-init runs (its documentation's "Userdata" page), as Cluster
//     API's Windows images use it.
//
// Anything else is not a script to them, and nothing runs.
//
// The simulator runs no PowerShell. It carries out the steps of winnode's
// own scripts (internal/bootstrap.UserData, internal/capibootstrap's
// bootstrap data of both modes) that change what winnode or Cluster API
// meet on the host, each recognised by its statement:
//
//   - `Set-Content -Path $authorizedKeys -Value '<key>'`: the key replaces
//     C:\ProgramData\ssh\administrators_authorized_keys (Pull data has none,
//     so the host's SSH server accepts no key: the operator cannot log in);
//   - `$hostKeysOf = ...'ssh\winnode-host-keys-of'` with its block: when
//     the file does not hold the VM's SMBIOS UUID (VMUUID), the host keys
//     are deleted and sshd's start makes new ones (Windows OpenSSH
//     generates missing host keys when the service starts), and the UUID
//     is recorded;
//   - `$kDir = 'C:\k'` with its icacls lines: C:\k created, owned by
//     Administrators, SYSTEM and Administrators only;
//   - `$computerName = '<name>'` with Rename-Computer and exit 1003: the
//     host is renamed (cloudbase-init reboots on exit code 1003 and runs the
//     script again, which then finds the name in place: simulated as one
//     boot under the new name);
//   - `$joinConfig = '<path>'` with the here-string `$joinConfigData = @'`
//     (Pull): the file written with that content; with the script's
//     `icacls.exe $joinConfig /inheritance:r /grant:r ...` line, readable
//     by SYSTEM and Administrators only, set before the content is written;
//   - `$agent = '<path>'` with `& $agent join --config $joinConfig` (Pull):
//     once the host has booted, the program runs as cloudbase-init runs the
//     script, under SYSTEM, its output and exit code going to cloudbase-init's
//     log (CloudbaseInitLog); a missing program fails the script as its
//     Test-Path line does;
//   - `$sentinel = '<path>'`: the file written with "success" (Cluster
//     API's bootstrap-success sentinel); in a script that runs the agent,
//     only once the agent has exited 0, as `throw` stops the real script
//     before it.
//
// Other statements (OpenSSH's capability, firewall rules, sshd_config) are
// what winsim's hosts already have. A key, name or join config that does
// not parse fails the script, as $ErrorActionPreference = 'Stop' makes the
// real one stop.
func (h *Host) RunUserData(data []byte) error {
	script, agent := userDataScript(data)
	if script == nil {
		h.log.Warn("simulated launch agent: the user data is not a script (no <powershell> tags, no #ps1_sysnative line); nothing runs")
		return nil
	}
	if h.Up() {
		return fmt.Errorf("simulated host %s: user data runs at boot, before the host is up", h.id.Hostname)
	}
	for _, step := range []func([]byte) error{h.userDataKey, h.userDataHostKeys, h.userDataKDir, h.userDataRename, h.userDataJoinConfig, h.userDataAgent} {
		if err := step(script); err != nil {
			return err
		}
	}
	if p := sentinelStatementRe.FindSubmatch(script); p != nil {
		if h.launch != nil {
			h.launch.sentinel = string(p[1]) // after the agent succeeded
		} else if err := h.writeSentinel(string(p[1])); err != nil {
			return err
		}
	}
	h.log.Info("simulated launch agent: ran the user data's script", "agent", agent)
	return nil
}

func (h *Host) userDataKey(script []byte) error {
	if k := authorizedKeyStatementRe.FindSubmatch(script); k != nil {
		return h.replaceAuthorizedKeys(k[1])
	}
	return nil
}

func (h *Host) userDataHostKeys(script []byte) error {
	if hostKeysOfStatementRe.Match(script) {
		return h.ownHostKeys()
	}
	return nil
}

func (h *Host) userDataKDir(script []byte) error {
	if kDirStatementRe.Match(script) {
		return h.createKDir()
	}
	return nil
}

func (h *Host) userDataRename(script []byte) error {
	if n := computerNameStatementRe.FindSubmatch(script); n != nil {
		return h.rename(string(n[1]))
	}
	return nil
}

// userDataScript is the script in data and the launch agent that runs that
// form (nil when data is no script).
func userDataScript(data []byte) ([]byte, string) {
	if m := powershellRe.FindSubmatch(data); m != nil {
		return m[1], "EC2Launch/cloudbase-init <powershell>"
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	switch strings.TrimSpace(string(first)) {
	case "#ps1_sysnative", "#ps1_x86":
		return rest, "cloudbase-init #ps1_sysnative"
	}
	return nil, ""
}

var (
	powershellRe             = regexp.MustCompile(`(?s)<powershell>(.*?)</powershell>`)
	authorizedKeyStatementRe = regexp.MustCompile(`(?m)^Set-Content -Path \$authorizedKeys -Value '([^'\r\n]*)'`)
	hostKeysOfStatementRe    = regexp.MustCompile(`(?m)^\$hostKeysOf = Join-Path \$env:ProgramData 'ssh\\winnode-host-keys-of'\r?$`)
	kDirStatementRe          = regexp.MustCompile(`(?m)^\$kDir = 'C:\\k'\r?$`)
	computerNameStatementRe  = regexp.MustCompile(`(?m)^\$computerName = '([^'\r\n]*)'`)
	sentinelStatementRe      = regexp.MustCompile(`(?m)^\$sentinel = '([^'\r\n]*)'`)
	joinConfigStatementRe    = regexp.MustCompile(`(?m)^\$joinConfig = '([^'\r\n]*)'`)
	joinConfigDataRe         = regexp.MustCompile(`(?ms)^\$joinConfigData = @'\r?\n(.*?)\r?\n'@\r?$`)
	joinConfigACLRe          = regexp.MustCompile(`(?m)^icacls\.exe \$joinConfig /inheritance:r /grant:r '\*S-1-5-32-544:F' /grant:r '\*S-1-5-18:F'`)
	agentStatementRe         = regexp.MustCompile(`(?m)^\$agent = '([^'\r\n]*)'`)
	agentJoinStatementRe     = regexp.MustCompile(`(?m)^& \$agent join --config \$joinConfig\r?$`)
)

// HostKeysOfPath records the VM whose SSH host keys C:\ProgramData\ssh
// holds (winnode's user data writes it).
const HostKeysOfPath = `C:\ProgramData\ssh\winnode-host-keys-of`

// ownHostKeys makes the host new SSH host keys unless HostKeysOfPath holds
// its VM's UUID, then records it there.
func (h *Host) ownHostKeys() error {
	p, err := h.Path(HostKeysOfPath)
	if err != nil {
		return err
	}
	if data, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(data)) == h.id.VMUUID {
		return nil
	}
	if err := h.newHostKey(); err != nil {
		return err
	}
	h.log.Info("simulated launch agent: SSH host keys made for this VM", "vmUUID", h.id.VMUUID, "hostKey", h.Fingerprint())
	return os.WriteFile(p, []byte(h.id.VMUUID+"\r\n"), 0o644)
}

// rename gives the host, not yet booted, a new computer name.
func (h *Host) rename(name string) error {
	if !netbiosName.MatchString(name) {
		return fmt.Errorf("simulated host %s: user data: Rename-Computer -NewName %q: not a valid computer name (1-15 letters, digits or hyphens)", h.id.Hostname, name)
	}
	if strings.EqualFold(name, h.id.Hostname) {
		return nil
	}
	h.log.Info("simulated launch agent: Rename-Computer, then a reboot (exit 1003) under the new name", "newName", name)
	h.id.Hostname = name
	h.log = h.opts.Logger.With("simulatedHost", name)
	return h.saveIdentity()
}

// writeSentinel writes a file the script leaves to say it succeeded.
func (h *Host) writeSentinel(path string) error {
	p, err := h.Path(path)
	if err != nil {
		return fmt.Errorf("simulated host %s: user data: sentinel %q: %w", h.id.Hostname, path, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte("success\r\n"), 0o644)
}

// replaceAuthorizedKeys writes line as the only administrators' key.
func (h *Host) replaceAuthorizedKeys(line []byte) error {
	if _, _, _, _, err := ssh.ParseAuthorizedKey(line); err != nil {
		return fmt.Errorf("simulated host %s: user data: the administrators' key %q: %w", h.id.Hostname, line, err)
	}
	file, err := h.Path(AuthorizedKeysPath)
	if err != nil {
		return err
	}
	return writeFileAtomic(file, append(line, '\r', '\n'), 0o600)
}

// createKDir creates C:\k as the user data does, when it does not exist.
func (h *Host) createKDir() error {
	const kDir = `C:\k`
	p, err := winpath.ResolveString(h.root, kDir)
	if err != nil {
		return err
	}
	if err := os.Mkdir(p, 0o755); errors.Is(err, os.ErrExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("simulated host %s: user data: creating %s: %w", h.id.Hostname, kDir, err)
	}
	return h.security.Set(kDir, acl.Administrators, profileDACL)
}
