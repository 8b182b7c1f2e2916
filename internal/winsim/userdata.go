package winsim

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/acl"
)

// RunUserData runs a machine's user data as a cloud's launch agent does at
// boot (simulated). EC2Launch, cloudbase-init and Azure's custom data run
// the PowerShell between <powershell> and </powershell> ("Run commands when
// you launch an EC2 instance with user data input",
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html);
// anything else is not a script to them, and nothing runs.
//
// The simulator runs no PowerShell. It carries out the steps of winnode's
// own user data (internal/bootstrap.UserData) that change what winnode
// meets on the host, each recognised by its statement:
//
//   - `Set-Content -Path $authorizedKeys -Value '<key>'`: the key replaces
//     C:\ProgramData\ssh\administrators_authorized_keys;
//   - `$kDir = 'C:\k'` with its icacls lines: C:\k created, owned by
//     Administrators, SYSTEM and Administrators only.
//
// Other statements (OpenSSH's capability, firewall rules, sshd_config) are
// what winsim's hosts already have. User data with neither statement
// changes nothing, as a script of other statements would change nothing
// winnode relies on; a key that does not parse fails the script, as
// $ErrorActionPreference = 'Stop' makes the real one stop.
func (h *Host) RunUserData(data []byte) error {
	m := powershellRe.FindSubmatch(data)
	if m == nil {
		h.log.Warn("simulated launch agent: the user data has no <powershell> script; nothing runs")
		return nil
	}
	script := m[1]
	if k := authorizedKeyStatementRe.FindSubmatch(script); k != nil {
		if err := h.replaceAuthorizedKeys(k[1]); err != nil {
			return err
		}
	}
	if kDirStatementRe.Match(script) {
		if err := h.createKDir(); err != nil {
			return err
		}
	}
	h.log.Info("simulated launch agent: ran the user data's <powershell> script")
	return nil
}

var (
	powershellRe             = regexp.MustCompile(`(?s)<powershell>(.*?)</powershell>`)
	authorizedKeyStatementRe = regexp.MustCompile(`(?m)^Set-Content -Path \$authorizedKeys -Value '([^'\r\n]*)'`)
	kDirStatementRe          = regexp.MustCompile(`(?m)^\$kDir = 'C:\\k'\r?$`)
)

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
