package capibootstrap

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
)

// MaxDataBytes is the most bootstrap data may weigh: EC2's limit on user
// data (16 KB before base64), the smallest of the infrastructure providers'
// (Azure's custom data takes 64 KB, OpenStack's 64 KB, vSphere's guestinfo
// more). PullBootstrapData refuses to render more.
const MaxDataBytes = 16 << 10

// PullInput is everything the Pull-mode bootstrap data of one Machine
// depends on.
type PullInput struct {
	// Namespace and Machine name the Machine (for the script's comment).
	Namespace, Machine string
	// ComputerName is the name the host gets (ComputerName); the join
	// config's node name is its lower-case form.
	ComputerName string
	// Firewall are the rules opened besides TCP 10250 (the kubelet).
	Firewall []bootstrap.FirewallRule
	// Join is the join config: the workload cluster's facts and the
	// Machine's bootstrap token.
	Join *joinconfig.Config
}

// PullBootstrapData renders the bootstrap data of one Machine in Pull
// mode: a cloudbase-init "#ps1_sysnative" script that, with nothing but
// the Windows image and this data, makes the host a node of its workload
// cluster. It
//
//  1. opens TCP 10250 (the kubelet) and the config's firewall ports;
//  2. renames the computer and has cloudbase-init reboot once for the new
//     name, as the Push data does;
//  3. writes the join config to C:\k\join.json, which holds the bootstrap
//     token: the file is created empty, given an ACL of SYSTEM and
//     Administrators alone (nothing inherited), and only then filled;
//  4. runs the image's C:\k\winnode-agent.exe join, which logs to
//     C:\var\log\winnode-agent\join.log (and to its standard error, which
//     cloudbase-init logs), and throws when it fails;
//  5. writes Cluster API's sentinel file for Windows.
//
// It sets up no SSH: no OpenSSH, no key, no port 22. The operator never
// reaches the host. The data holds a secret, the token: it lives in the
// bootstrap-data Secret and the host's user data only, never in a log.
// The output depends only on in.
func PullBootstrapData(in PullInput) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("rendering Pull bootstrap data for Machine %s/%s: %w", in.Namespace, in.Machine, err)
	}
	if !machineRefRe.MatchString(in.Namespace) || !machineRefRe.MatchString(in.Machine) {
		return nil, fmt.Errorf("rendering bootstrap data: Machine %q/%q is not a Kubernetes object name", in.Namespace, in.Machine)
	}
	if err := CheckComputerName(in.ComputerName); err != nil {
		return fail(err)
	}
	if in.Join == nil || in.Join.NodeName != plan.NodeName(in.ComputerName) {
		return fail(fmt.Errorf("the join config must name node %s, the computer name in lower case", plan.NodeName(in.ComputerName)))
	}
	for _, r := range in.Firewall {
		if err := r.Check(); err != nil {
			return fail(err)
		}
	}
	join, err := joinconfig.Encode(in.Join)
	if err != nil {
		return fail(err)
	}
	// Compact JSON has no line break and no "'@": it cannot end the
	// single-quoted here-string that carries it.
	if bytes.ContainsAny(join, "\r\n") {
		return fail(fmt.Errorf("the encoded join config spans lines"))
	}
	var b bytes.Buffer
	err = pullDataTemplate.Execute(&b, struct {
		Namespace, Machine, ComputerName, Server, JoinConfigPath, JoinConfig, LogPath string
		Firewall                                                                      []bootstrap.FirewallRule
		RenameStep, SentinelStep                                                      int
	}{in.Namespace, in.Machine, in.ComputerName, in.Join.Cluster.Server, joinconfig.Path, string(join), joinconfig.LogPath, in.Firewall, 2, 5})
	if err != nil {
		return fail(err)
	}
	if b.Len() > MaxDataBytes {
		return fail(fmt.Errorf("%d bytes, over the %d that every infrastructure provider's user data takes", b.Len(), MaxDataBytes))
	}
	return b.Bytes(), nil
}

// psQuote is a single-quoted PowerShell string of s (' doubled).
func psQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// The SIDs *S-1-5-32-544 (BUILTIN\Administrators) and *S-1-5-18 (SYSTEM)
// keep icacls working on hosts whose language is not English. The join
// config is written without a byte order mark (UTF8Encoding($false)):
// the agent reads JSON, which has none.
var pullDataTemplate = template.Must(template.Must(dataBlocks.Clone()).New("pull").Funcs(template.FuncMap{"ps": psQuote}).Parse(`#ps1_sysnative
# winnode bootstrap data (Cluster API, Pull mode) for Machine {{.Namespace}}/{{.Machine}}.
# cloudbase-init runs it as user data. It names this Windows host
# {{.ComputerName}}, writes the join config and runs winnode-agent join, which
# makes the host a node of the cluster at {{.Server}} by itself,
# from the payload baked into the image. It sets up no SSH: the operator
# never reaches this host. The join config holds a bootstrap token.
# Safe to run again.
$ErrorActionPreference = 'Stop'

# 1. Firewall: 10250 for the kubelet (logs, exec, metrics).
foreach ($rule in @(@{ Name = 'winnode-kubelet'; Protocol = 'TCP'; Port = 10250 }{{range .Firewall}}, @{ Name = {{ps .Name}}; Protocol = '{{.Protocol}}'; Port = {{.Port}} }{{end}})) {
    if (-not (Get-NetFirewallRule -Name $rule.Name -ErrorAction SilentlyContinue)) {
        New-NetFirewallRule -Name $rule.Name -DisplayName $rule.Name -Direction Inbound -Protocol $rule.Protocol -LocalPort $rule.Port -Action Allow | Out-Null
    }
}

{{template "rename" .}}
# 3. The join config. It holds a bootstrap token: the file is made empty,
#    readable by SYSTEM and Administrators only (nothing inherited), and
#    only then written.
$joinConfig = {{ps .JoinConfigPath}}
New-Item -ItemType Directory -Force -Path (Split-Path -Path $joinConfig) | Out-Null
New-Item -ItemType File -Force -Path $joinConfig | Out-Null
icacls.exe $joinConfig /inheritance:r /grant:r '*S-1-5-32-544:F' /grant:r '*S-1-5-18:F' | Out-Null
if ($LASTEXITCODE -ne 0) { throw "icacls could not restrict $joinConfig (exit code $LASTEXITCODE)" }
$joinConfigData = @'
{{.JoinConfig}}
'@
[System.IO.File]::WriteAllText($joinConfig, $joinConfigData, (New-Object System.Text.UTF8Encoding $false))
Remove-Variable -Name joinConfigData

# 4. Join, with the agent and payload the image carries (winnodectl image):
#    it checks every payload file, renders this node's plan, installs the
#    services and joins. Its log: {{.LogPath}}.
$agent = 'C:\k\winnode-agent.exe'
if (-not (Test-Path -LiteralPath $agent)) { throw "$agent is missing: this Windows image does not carry winnode (bake in what winnodectl image writes)" }
& $agent join --config $joinConfig
if ($LASTEXITCODE -ne 0) { throw "winnode-agent join failed (exit code $LASTEXITCODE); its log: {{.LogPath}}" }

{{template "sentinel" .}}`))
