package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

func newCheckCommand(s Streams) *cobra.Command {
	var (
		hf         hostFlags
		payloadDir string
	)
	cmd := &cobra.Command{
		Use:   "check HOST --ssh-key FILE [--user Administrator] [--port 22]",
		Short: "Run the pre-flight checks on a Windows host, changing nothing",
		Long: `Run winnode's pre-flight checks on one host before adding it, and print a
table of each check, its result (pass, warn or fail) and what to do about it.
Nothing is configured: the agent is uploaded to the SSH user's profile folder,
runs its checks read-only (winnode-agent.exe info --preflight) and is deleted
again. The checks are the ones the operator runs on first contact and before
each upgrade (docs/troubleshooting.md maps each to its fix):

  windows-build       a supported Windows Server release, at its required update
  containers-feature  the Containers feature, or the restart enabling it takes
  disk                free space on the system drive (--min-free-disk-gib)
  clock               the host's clock against this machine's
  node-name           the computer name is a valid node name, no other Node's
                      and no name of the API server's certificate
  dns                 the node name resolves to the host's address (warning)
  api-server          the host completes a TLS handshake with the API server
  container-runtime   no foreign containerd under --container-runtime managed
  defender            whether Microsoft Defender runs (exclusions are added)
  addressing          a DHCP address on a host listed by IP (warning)

The exit status is 1 when a check fails, 0 otherwise (warnings included).`,
		Example: `  # Check a host before adding it
  winnodectl check 10.0.0.7 --ssh-key ~/.ssh/winnode

  # Another account and port, and the cluster it is meant for
  winnodectl check win-02.example.internal --user winadmin --port 2222 \
    --ssh-key ~/.ssh/winnode --kubeconfig ~/.kube/prod`,
		Args: exactArgs("HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := hf.check(args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), hf.timeout)
			defer cancel()
			return runCheck(ctx, s, hf, h, payloadOrDefault(payloadDir))
		},
	}
	hf.add(cmd.Flags(), 5*time.Minute)
	hf.approval.add(cmd.Flags())
	addPayloadFlag(cmd, &payloadDir)
	cmd.Flags().StringVar(&hf.containerRuntime, "container-runtime", "managed", inventory.ContainerRuntimeHelp+" (the container-runtime check)")
	cmd.Flags().IntVar(&hf.minFreeDiskGiB, "min-free-disk-gib", plan.DefaultMinFreeGiB, "free space (GiB) the disk check asks of the system drive")
	addHostKeyFlag(cmd, &hf.hostKey)
	return cmd
}

// runCheck runs the checks on one host and prints their table.
func runCheck(ctx context.Context, s Streams, hf hostFlags, h inventory.Host, payloadDir string) error {
	manifest, err := payload.Load(payloadDir)
	if err != nil {
		return fmt.Errorf("loading the agent from --payload-dir %s: %w (build it with make payload)", payloadDir, err)
	}
	sess, err := hf.connect()
	if err != nil {
		return err
	}
	inst := newHostInstance(h)
	if err := pinFromNode(ctx, sess.kube, inst); err != nil {
		return err
	}
	steps := newStepPrinter(io.Discard, false, time.Now())
	cfg, err := hf.engine(s, sess, steps)
	if err != nil {
		return err
	}
	cfg.PayloadDir, cfg.Payload = payloadDir, manifest
	cfg.MinFreeDiskGiB = hf.minFreeDiskGiB
	results, err := cfg.Check(ctx, inst)
	if err != nil {
		return fmt.Errorf("checking %s: %w", h.Address, err)
	}
	if err := view.WritePreflightTable(s.Out, results); err != nil {
		return err
	}
	for _, r := range results {
		if r.Result == plan.PreflightFail {
			return WithCode(ExitFailed, fmt.Errorf("%s failed pre-flight check %s: fix it (the table says how) and run check again", h.Address, r.Check))
		}
	}
	return nil
}
