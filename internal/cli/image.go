package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/image"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
)

func newImageCommand(s Streams) *cobra.Command {
	var out, payloadDir string
	cmd := &cobra.Command{
		Use:   "image --output DIR [--payload-dir DIR]",
		Short: "Write what a Windows image must bake in for Cluster API's Pull mode",
		Long: `Write the folder a Windows image build bakes in for Cluster API's Pull mode
(docs/cluster-api.md): every file of the payload in --payload-dir, the agent
among them, at the place it is installed on the host (DIR/C goes onto C:\),
the payload's manifest at ` + joinconfig.ImageManifestPath + `, which winnode-agent join
checks every file against at first boot, and DIR/README.md, which says what
else the image needs (the Containers feature, cloudbase-init) and how a Packer
(image-builder) Windows build copies the folder in.

DIR must not exist or be empty. The payload must be whole: a file missing or
not matching its manifest is refused by name. Use the payload of the
operator's version (its image carries it, and ` + "`make payload`" + ` builds it):
an operator supports images of its own release line and of the one before.`,
		Example: `  # The image contents for the payload built by make payload
  winnodectl image --payload-dir ./payload --output ./winnode-image
  # then, in the Packer template: provisioner "file" { source = "./winnode-image/C/" destination = "C:\\" }`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return UsageErrorf("--output DIR is required: the folder to write the image's contents to")
			}
			src := payloadOrDefault(payloadDir)
			m, err := image.Write(src, out)
			if err != nil {
				return fmt.Errorf("writing the image's contents from --payload-dir %s: %w", src, err)
			}
			agent, _ := m.Lookup(plan.PayloadAgent)
			fmt.Fprintf(s.Out, "%s: winnode %s, %d payload files and the manifest under %s/C (C:\\ on the host); %s says how to bake them in\n",
				out, agent.Version, len(m.Files), out, image.ReadmeFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "output", "", "the folder to write (required; new or empty)")
	addPayloadFlag(cmd, &payloadDir)
	return cmd
}
