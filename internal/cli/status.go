package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli/view"
)

func newStatusCommand(s Streams) *cobra.Command {
	var (
		cluster  clusterFlags
		output   outputFormat
		watch    bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every Windows host (WindowsInstance) and its node",
		Long: `Show every WindowsInstance with its phase, current step, node and the node's
Ready status, the winnode version it is configured with, its age and its last
error. The table shortens long errors; -o json has them whole.

Cluster API Machines in Pull mode have no WindowsInstance: a table of their
own shows each Machine's cluster, computer name and stage (Waiting,
CredentialIssued, DataWritten, JoinTimedOut, NodeRegistered, Ready), read
from its WinnodeConfig and Machine.

NODE STATUS is the node's Ready condition as kubectl shows it, or Missing when
the instance names a node that does not exist (yet).

With --watch, the table is followed by one line per change of a host's phase,
step, node or error, until Ctrl-C.`,
		Example: `  # Where is every Windows host?
  winnodectl status

  # The same for scripts
  winnodectl status -o json | jq -r '.instances[] | select(.phase != "Ready") | .name'

  # Then one line per change, until Ctrl-C
  winnodectl status --watch`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if watch && output == outputJSON {
				return UsageErrorf("--watch prints lines for people; with -o json, run status again instead")
			}
			cfg, err := cluster.restConfig()
			if err != nil {
				return err
			}
			c, err := NewClient(cfg)
			if err != nil {
				return err
			}
			rows, err := view.ListInstanceRows(cmd.Context(), c)
			switch {
			case errors.Is(err, view.ErrNoInstanceAPI):
				// No operator here; nodes of winnodectl add may still be.
				fmt.Fprintf(s.Err, "Note: %v\n", err)
			case err != nil:
				return err
			}
			added, err := listAddedNodes(cmd.Context(), c, rows)
			if err != nil {
				return err
			}
			pull, err := view.ListPullRows(cmd.Context(), c)
			if err != nil {
				// The hosts above are still worth showing.
				fmt.Fprintf(s.Err, "Note: no Cluster API Machines in Pull mode shown: %v\n", err)
			}
			if output == outputJSON {
				return writeJSON(s.Out, struct {
					Instances []view.InstanceRow `json:"instances"`
					// AddedNodes are Windows nodes that winnodectl add
					// configured: no WindowsInstance stands for them.
					AddedNodes []view.NodeRow `json:"addedNodes"`
					// PullMachines are Cluster API Machines in Pull mode:
					// no WindowsInstance stands for them either.
					PullMachines []view.PullRow `json:"pullMachines"`
				}{rows, added, pull})
			}
			if len(rows) == 0 && len(added) == 0 && len(pull) == 0 {
				fmt.Fprintln(s.Err, "No WindowsInstances found. List a host in ConfigMap windows-instances (namespace winnode-system) or run `winnodectl add HOST`.")
				if !watch {
					return nil
				}
			}
			if err := writeStatusTables(s.Out, rows, added, pull, time.Now()); err != nil {
				return err
			}
			if watch {
				return watchHosts(cmd.Context(), c, s.Out, interval)
			}
			return nil
		},
	}
	cluster.add(cmd.Flags())
	addOutputFlag(cmd.Flags(), &output)
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the table, print each change until Ctrl-C (table output only)")
	cmd.Flags().DurationVar(&interval, "watch-interval", 2*time.Second, "how often --watch looks")
	return cmd
}

// writeStatusTables prints the tables of status: WindowsInstances, nodes
// of winnodectl add, Cluster API Machines in Pull mode (each table only
// when it has rows).
func writeStatusTables(out io.Writer, rows []view.InstanceRow, added []view.NodeRow, pull []view.PullRow, now time.Time) error {
	sep := false
	if len(rows) > 0 {
		if err := view.WriteInstanceTable(out, rows, now); err != nil {
			return err
		}
		sep = true
	}
	if len(added) > 0 {
		if sep {
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, "Nodes added with winnodectl add (no WindowsInstance):")
		if err := view.WriteNodeTable(out, added, now); err != nil {
			return err
		}
		sep = true
	}
	if len(pull) > 0 {
		if sep {
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, "Cluster API Machines in Pull mode (no WindowsInstance; the operator never reaches their hosts):")
		return view.WritePullTable(out, pull, now)
	}
	return nil
}

// watchHosts prints a line whenever a host's state changes, until ctx ends.
func watchHosts(ctx context.Context, c client.Client, out io.Writer, interval time.Duration) error {
	lines := view.NewLines(out, time.Now())
	if hosts, err := view.ReadHostStates(ctx, c, nil); err == nil {
		lines.Remember(time.Now(), hosts) // what the table showed: only changes follow
	}
	fmt.Fprintln(out, "\nWatching; one line per change until Ctrl-C.")
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		hosts, err := view.ReadHostStates(ctx, c, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		lines.Show(time.Now(), hosts)
	}
}

// listAddedNodes lists the nodes winnode configured (annotation
// winnode.io/version) that no WindowsInstance names: those of winnodectl add.
func listAddedNodes(ctx context.Context, c client.Client, instances []view.InstanceRow) ([]view.NodeRow, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	managed := map[string]bool{}
	for _, r := range instances {
		managed[r.Node] = true
	}
	rows := []view.NodeRow{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, ok := n.Annotations[winnodev1.AnnotationVersion]; ok && !managed[n.Name] {
			rows = append(rows, view.NewNodeRow(n))
		}
	}
	return rows, nil
}
