package image

import (
	"bytes"
	"text/template"

	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// Readme is the image folder's README: what is in it, what else the image
// needs, and how a Packer Windows build bakes it in.
func Readme(m *payload.Manifest) []byte {
	agent, _ := m.Lookup(plan.PayloadAgent)
	var b bytes.Buffer
	_ = readmeTemplate.Execute(&b, struct {
		Version, Manifest, JoinConfig, Log string
		Files                              []string
	}{agent.Version, joinconfig.ImageManifestPath, joinconfig.Path, joinconfig.LogPath, Files(m)})
	return b.Bytes()
}

var readmeTemplate = template.Must(template.New("readme").Parse(`# winnode {{.Version}}: what a Windows image bakes in (Cluster API, Pull mode)

Written by ` + "`winnodectl image`" + `. In Pull mode a Windows Machine becomes a node
by itself: Cluster API's bootstrap data (written by the winnode operator)
runs under cloudbase-init at first boot, writes the join config
{{.JoinConfig}} and runs ` + "`C:\\k\\winnode-agent.exe join`" + `, which checks
every file below against the manifest, renders the node's plan on the host,
installs the kubelet and its companions as Windows services and joins.

## What is here

` + "`C/`" + ` is what goes onto the image's C:\ drive, each file at the place
it is installed:

{{range .Files}}    {{.}}
{{end}}
The manifest ({{.Manifest}}) records each file's size and SHA-256; a
file missing or changed on a host is refused by name in the host's log, and
that host does not become a node.

## What the image needs besides

- Windows Server 2019 or 2022 with the Windows feature Containers enabled
  (Install-WindowsFeature Containers, then a restart during the image
  build): the join installs containerd from the payload above, but cannot
  restart the host halfway, so without the feature it stops with
  RebootRequired. The image must not run a containerd of its own: the
  join refuses it;
- cloudbase-init, configured with the metadata service of your
  infrastructure provider and its UserDataPlugin on: it runs the bootstrap
  data, a ` + "`#ps1_sysnative`" + ` PowerShell script, with 64-bit PowerShell.
  The script renames the computer and asks cloudbase-init for a reboot
  (exit code 1003) before it joins: leave cloudbase-init's reboot handling
  on.

## Packer

image-builder's Windows builds are Packer builds; add a file provisioner
that copies this folder's C/ onto C:\ before the image is generalized
(sysprep), for example:

    provisioner "file" {
      source      = "<this folder>/C/"
      destination = "C:\\"
    }

(A trailing slash on source copies the folder's contents.) The files must be
owned by Administrators or SYSTEM, as what an elevated provisioner writes
is: at boot the agent refuses folders of winnode that another user owns,
and makes them writable by SYSTEM and Administrators only.

## Versions

An operator supports the agents of its own release line and of the one
before (a v0.5 operator supports v0.4 and v0.5 images): build the image
again with ` + "`winnodectl image`" + ` of each new winnode release, and roll
your MachineDeployments to it (docs/cluster-api.md, "Upgrades in Pull
mode"). An image the operator does not support is refused in the host's
log.

## On the host

` + "`winnode-agent join`" + ` logs to {{.Log}}; its output also goes to
cloudbase-init's log
(C:\Program Files\Cloudbase Solutions\Cloudbase-Init\log\cloudbase-init.log).
`))
