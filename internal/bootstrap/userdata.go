package bootstrap

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"golang.org/x/crypto/ssh"
)

// AuthorizedKey is the public key as one authorized_keys line, without
// comment or trailing newline: "ssh-ed25519 AAAA...".
func AuthorizedKey(pub ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

// authorizedKeyRe is what AuthorizedKey can produce: a key type and base64.
// The user data embeds the key in a single-quoted PowerShell string; checking
// it against this pattern proves no quote or newline can end up there.
var authorizedKeyRe = regexp.MustCompile(`\A[a-z0-9@.-]+ [A-Za-z0-9+/]+={0,2}\z`)

// UserData renders the user data script for Windows hosts (Secret
// windows-user-data, key userData; `winnodectl userdata`): PowerShell in
// <powershell> tags, understood by EC2Launch, cloudbase-init and Azure's
// custom data, marked <persist> so it runs at every boot like WMCO's. Its
// body is SSHSetupScript with the default firewall rules.
//
// Running it again is harmless. The output depends only on pub.
func UserData(pub ssh.PublicKey) ([]byte, error) {
	body, err := SSHSetupScript(pub, nil)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := userDataTemplate.Execute(&b, struct{ Fingerprint, Body string }{ssh.FingerprintSHA256(pub), body}); err != nil {
		return nil, fmt.Errorf("rendering user data: %w", err)
	}
	return b.Bytes(), nil
}

// FirewallRule is an inbound Windows Firewall rule that SSHSetupScript
// creates when no rule of that name exists.
type FirewallRule struct {
	// Name of the rule (also its display name): lower-case letters, digits
	// and hyphens.
	Name string
	// Protocol: "TCP" or "UDP".
	Protocol string
	// Port: 1-65535.
	Port int32
}

// firewallRuleNameRe is what a rule name may be; the script embeds it in a
// single-quoted PowerShell string.
var firewallRuleNameRe = regexp.MustCompile(`\A[a-z0-9][a-z0-9-]{0,62}\z`)

// Check refuses a rule the scripts cannot embed.
func (r FirewallRule) Check() error {
	switch {
	case !firewallRuleNameRe.MatchString(r.Name):
		return fmt.Errorf("firewall rule name %q: use 1-63 lower-case letters, digits and hyphens", r.Name)
	case r.Protocol != "TCP" && r.Protocol != "UDP":
		return fmt.Errorf("firewall rule %s: protocol %q is neither TCP nor UDP", r.Name, r.Protocol)
	case r.Port < 1 || r.Port > 65535:
		return fmt.Errorf("firewall rule %s: port %d is outside 1-65535", r.Name, r.Port)
	}
	return nil
}

// SSHSetupScript renders the PowerShell statements (no tags, no header)
// that prepare a Windows host for the operator; UserData and the Cluster
// API bootstrap data (internal/capibootstrap) both run them. They
//
//   - install the OpenSSH Server capability if missing, and start sshd
//     automatically at boot;
//   - give the VM SSH host keys of its own, once: a VM cloned from an image
//     (or from another VM) keeps the key files of C:\ProgramData\ssh, so
//     every clone would present one key, and winnode pins a key per host
//     (docs/trust.md, HostKeyConflict). The keys are deleted, and made
//     afresh by sshd's next start, whenever the VM's SMBIOS UUID (which
//     the hypervisor gives each VM) differs from the one recorded in
//     C:\ProgramData\ssh\winnode-host-keys-of;
//   - open TCP 22 (SSH, the operator) and 10250 (the kubelet: logs, exec,
//     metrics) in Windows Firewall, and the extra rules given;
//   - write pub to C:\ProgramData\ssh\administrators_authorized_keys with an
//     ACL of Administrators and SYSTEM full control only, inheritance removed
//     (sshd ignores the file otherwise);
//   - turn password authentication off and public key authentication on in
//     sshd_config, then restart sshd;
//   - create C:\k, if missing, owned by Administrators and writable by
//     SYSTEM and Administrators only, so that no local user can create it
//     first and plant or swap the agent binary the operator runs from there
//     before the agent can secure its folders (docs/trust.md).
//
// They expect $ErrorActionPreference = 'Stop' and are safe to run again.
func SSHSetupScript(pub ssh.PublicKey, extra []FirewallRule) (string, error) {
	line := AuthorizedKey(pub)
	if !authorizedKeyRe.MatchString(line) {
		// Cannot happen with keys parsed by x/crypto/ssh; refuse rather than
		// embed something unexpected in a script.
		return "", fmt.Errorf("rendering user data: public key %q has an unexpected form", line)
	}
	for _, r := range extra {
		if err := r.Check(); err != nil {
			return "", fmt.Errorf("rendering user data: %w", err)
		}
	}
	var b bytes.Buffer
	if err := sshSetupTemplate.Execute(&b, struct {
		AuthorizedKey string
		Extra         []FirewallRule
	}{line, extra}); err != nil {
		return "", fmt.Errorf("rendering user data: %w", err)
	}
	return b.String(), nil
}

var userDataTemplate = template.Must(template.New("userdata").Parse(`<powershell>
# winnode user data: prepares this Windows host to be configured by the
# winnode operator over SSH with the key {{.Fingerprint}}.
# Safe to run again; it runs at every boot.
$ErrorActionPreference = 'Stop'

{{.Body}}</powershell>
<persist>true</persist>
`))

// The SIDs *S-1-5-32-544 (BUILTIN\Administrators) and *S-1-5-18 (SYSTEM) keep
// icacls working on hosts whose language is not English.
var sshSetupTemplate = template.Must(template.New("ssh").Parse(`# 1. OpenSSH Server, started automatically at boot.
$capability = Get-WindowsCapability -Online -Name 'OpenSSH.Server*' | Select-Object -First 1
if ($capability.State -ne 'Installed') {
    Add-WindowsCapability -Online -Name $capability.Name | Out-Null
}
Set-Service -Name sshd -StartupType Automatic
# SSH host keys of this VM's own: a clone of an image keeps the image's keys.
# They are made again once per VM, recognised by its SMBIOS UUID.
$vmId = (Get-CimInstance -ClassName Win32_ComputerSystemProduct).UUID
$hostKeysOf = Join-Path $env:ProgramData 'ssh\winnode-host-keys-of'
if (-not (Test-Path -LiteralPath $hostKeysOf) -or "$(Get-Content -LiteralPath $hostKeysOf -Raw)".Trim() -ne $vmId) {
    Stop-Service -Name sshd -ErrorAction SilentlyContinue
    Remove-Item -Path (Join-Path $env:ProgramData 'ssh\ssh_host_*') -Force -ErrorAction SilentlyContinue
    Set-Content -Path $hostKeysOf -Value $vmId -Encoding ascii
}
# The first start creates C:\ProgramData\ssh\sshd_config and the host keys
# that are missing.
Start-Service -Name sshd

# 2. Firewall: SSH for the operator, 10250 for the kubelet (logs, exec, metrics).
foreach ($rule in @(@{ Name = 'winnode-ssh'; Port = 22 }, @{ Name = 'winnode-kubelet'; Port = 10250 })) {
    if (-not (Get-NetFirewallRule -Name $rule.Name -ErrorAction SilentlyContinue)) {
        New-NetFirewallRule -Name $rule.Name -DisplayName $rule.Name -Direction Inbound -Protocol TCP -LocalPort $rule.Port -Action Allow | Out-Null
    }
}{{- range .Extra}}
if (-not (Get-NetFirewallRule -Name '{{.Name}}' -ErrorAction SilentlyContinue)) {
    New-NetFirewallRule -Name '{{.Name}}' -DisplayName '{{.Name}}' -Direction Inbound -Protocol {{.Protocol}} -LocalPort {{.Port}} -Action Allow | Out-Null
}
{{- end}}

# 3. The operator's public key, readable by Administrators and SYSTEM only:
#    sshd ignores administrators_authorized_keys when anyone else has access.
$authorizedKeys = Join-Path $env:ProgramData 'ssh\administrators_authorized_keys'
Remove-Item -Path $authorizedKeys -Force -ErrorAction SilentlyContinue
Set-Content -Path $authorizedKeys -Value '{{.AuthorizedKey}}' -Encoding ascii
icacls.exe $authorizedKeys /inheritance:r /grant '*S-1-5-32-544:F' /grant '*S-1-5-18:F' | Out-Null
if ($LASTEXITCODE -ne 0) { throw "icacls could not restrict $authorizedKeys (exit code $LASTEXITCODE)" }

# 4. Keys only: password authentication off. sshd uses the first value it
#    reads for each keyword, and Match blocks end the global section, so the
#    settings go first and every other copy of them is removed.
$sshdConfig = Join-Path $env:ProgramData 'ssh\sshd_config'
$rest = Get-Content -Path $sshdConfig | Where-Object { $_ -notmatch '^\s*#?\s*(PasswordAuthentication|PubkeyAuthentication)\s' }
Set-Content -Path $sshdConfig -Encoding ascii -Value (@('PubkeyAuthentication yes', 'PasswordAuthentication no') + $rest)
Restart-Service -Name sshd

# 5. winnode's folder C:\k, made before any local user can make it: owned by
#    Administrators, only SYSTEM and Administrators may write or read in it.
#    The operator runs winnode-agent.exe from there before the agent can
#    check anything. An existing C:\k is left as it is: the agent refuses
#    one that someone other than an administrator owns.
$kDir = 'C:\k'
if (-not (Test-Path -LiteralPath $kDir)) {
    New-Item -ItemType Directory -Path $kDir | Out-Null
    icacls.exe $kDir /setowner '*S-1-5-32-544' | Out-Null
    if ($LASTEXITCODE -ne 0) { throw "icacls could not make Administrators the owner of $kDir (exit code $LASTEXITCODE)" }
    icacls.exe $kDir /inheritance:r /grant '*S-1-5-32-544:(OI)(CI)F' /grant '*S-1-5-18:(OI)(CI)F' | Out-Null
    if ($LASTEXITCODE -ne 0) { throw "icacls could not restrict $kDir (exit code $LASTEXITCODE)" }
}
`))
