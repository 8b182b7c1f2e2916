package capibootstrap

import (
	"bytes"
	"fmt"
	"regexp"
	"text/template"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/bootstrap"
)

// DataInput is everything the bootstrap data of one Machine depends on.
type DataInput struct {
	// Namespace and Machine name the Machine (for the script's comment).
	Namespace, Machine string
	// ComputerName is the name the host gets (ComputerName, checked by
	// CheckComputerName).
	ComputerName string
	// PublicKey is the operator's SSH public key.
	PublicKey ssh.PublicKey
	// Firewall are the rules opened besides TCP 22 and 10250.
	Firewall []bootstrap.FirewallRule
}

// machineRefRe is what a Kubernetes namespace and object name can be
// (lower-case DNS subdomain characters); the names are only written into a
// comment, and are checked so that no line break can end it.
var machineRefRe = regexp.MustCompile(`\A[a-z0-9][a-z0-9.-]{0,252}\z`)

// BootstrapData renders the bootstrap data of one Machine: a cloudbase-init
// user-data script. Its first line, "#ps1_sysnative", makes cloudbase-init
// run it with the 64-bit PowerShell (cloudbase-init's documentation,
// "Userdata"). It runs bootstrap.SSHSetupScript (OpenSSH with the
// operator's key, the firewall), then renames the computer and has
// cloudbase-init reboot once for the new name, and writes Cluster API's
// sentinel file for Windows when the host carries its name.
//
// The data holds no secret: the operator's public key only; the host joins
// the cluster later, over SSH, with credentials the operator brings. The
// output depends only on in: same input, same bytes.
func BootstrapData(in DataInput) ([]byte, error) {
	if !machineRefRe.MatchString(in.Namespace) || !machineRefRe.MatchString(in.Machine) {
		return nil, fmt.Errorf("rendering bootstrap data: Machine %q/%q is not a Kubernetes object name", in.Namespace, in.Machine)
	}
	if err := CheckComputerName(in.ComputerName); err != nil {
		return nil, fmt.Errorf("rendering bootstrap data for Machine %s/%s: %w", in.Namespace, in.Machine, err)
	}
	body, err := bootstrap.SSHSetupScript(in.PublicKey, in.Firewall)
	if err != nil {
		return nil, fmt.Errorf("rendering bootstrap data for Machine %s/%s: %w", in.Namespace, in.Machine, err)
	}
	var b bytes.Buffer
	err = bootstrapDataTemplate.Execute(&b, struct {
		Namespace, Machine, ComputerName, Fingerprint, SSHSetup string
		RenameStep, SentinelStep                                int
	}{in.Namespace, in.Machine, in.ComputerName, ssh.FingerprintSHA256(in.PublicKey), body, 5, 6})
	if err != nil {
		return nil, fmt.Errorf("rendering bootstrap data for Machine %s/%s: %w", in.Namespace, in.Machine, err)
	}
	return b.Bytes(), nil
}

// The exit codes are cloudbase-init's convention for user-data scripts
// (cloudbaseinit/plugins/common/execcmd.py, get_plugin_return_value, and the
// "Userdata" page of its documentation): 1001 reboot and do not run the
// script again, 1002 do not reboot and run it again at the next boot, 1003
// reboot and run it again at the next boot; any other code ends the plugin.
// The rename exits 1003 rather than 1001 so that the script runs once more
// after the reboot: it then finds the new name in place, and only then
// goes on (Pull: joins) and writes the sentinel. The marker file stops a
// reboot loop if the name did not take: the second run throws instead
// (cloudbase-init logs the error).
//
// Both modes' scripts share these blocks; .Step numbers each in its
// script.
var dataBlocks = template.Must(template.New("blocks").Parse(`{{define "rename"}}# {{.RenameStep}}. The computer name (NetBIOS-safe: 15 characters at most). Windows
#    applies a new name at the next boot: exit code 1003 asks cloudbase-init
#    to reboot and run this script again, which then finds the name in place.
$computerName = '{{.ComputerName}}'
$renameMarker = Join-Path $env:ProgramData 'winnode\rename-requested'
if ($env:COMPUTERNAME -ne $computerName) {
    if ((Test-Path -Path $renameMarker) -and ((Get-Content -Path $renameMarker -Raw).Trim() -eq $computerName)) {
        throw "the computer is still named $env:COMPUTERNAME after a reboot to rename it $computerName; not rebooting again"
    }
    New-Item -ItemType Directory -Force -Path (Split-Path -Path $renameMarker) | Out-Null
    Set-Content -Path $renameMarker -Value $computerName -Encoding ascii
    Rename-Computer -NewName $computerName -Force
    exit 1003
}
{{end}}{{define "sentinel"}}# {{.SentinelStep}}. Cluster API's sentinel file for Windows: bootstrap data applied.
$sentinel = 'C:\run\cluster-api\bootstrap-success.complete'
New-Item -ItemType Directory -Force -Path (Split-Path -Path $sentinel) | Out-Null
Set-Content -Path $sentinel -Value 'success' -Encoding ascii
exit 0
{{end}}`))

var bootstrapDataTemplate = template.Must(template.Must(dataBlocks.Clone()).New("push").Parse(`#ps1_sysnative
# winnode bootstrap data (Cluster API) for Machine {{.Namespace}}/{{.Machine}}.
# cloudbase-init runs it as user data. It prepares this Windows host to be
# configured by the winnode operator over SSH with the key
# {{.Fingerprint}}, and names it {{.ComputerName}}.
# It holds no join secret: the operator joins the host over SSH.
# Safe to run again.
$ErrorActionPreference = 'Stop'

{{.SSHSetup}}
{{template "rename" .}}
{{template "sentinel" .}}`))
