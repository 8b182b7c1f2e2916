package cli

import (
	"time"

	"github.com/spf13/cobra"
)

func newUpgradeCommand(s Streams) *cobra.Command {
	var (
		hf         hostFlags
		payloadDir string
	)
	cmd := &cobra.Command{
		Use:   "upgrade HOST --ssh-key FILE [--payload-dir DIR]",
		Short: "Move a host added with winnodectl add to a new payload and version",
		Long: `Move a host that winnodectl add made a node to the payload in --payload-dir and
to this winnodectl's version, with the operator's own steps (the same code as
add): only the files whose hash changed are uploaded; when the new plan
restarts services, the node is first cordoned and drained (evictions, as
kubectl drain does) and uncordoned once Ready again; the agent restarts only
the services whose binary, configuration or arguments changed.

The host key add pinned (ConfigMap kube-system/winnode-host-keys) is
checked; a node with no pin kept there needs --host-key. Hosts the operator
manages are upgraded by the operator when it is upgraded.`,
		Example: `  # After building a new payload (make payload)
  winnodectl upgrade 10.0.0.7 --ssh-key ~/.ssh/winnode --payload-dir ./payload`,
		Args: exactArgs("HOST"),
		RunE: runAddE(s, &hf, &payloadDir, true),
	}
	hf.add(cmd.Flags(), 20*time.Minute)
	hf.approval.add(cmd.Flags())
	addPayloadFlag(cmd, &payloadDir)
	addJoinCredentialsFlag(cmd, &hf)
	addHostKeyFlag(cmd, &hf.hostKey)
	return cmd
}
