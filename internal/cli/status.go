package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

func newStatusCommand(s Streams) *cobra.Command {
	var (
		cluster clusterFlags
		output  outputFormat
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every Windows host (WindowsInstance) and its node",
		Long: `Show every WindowsInstance with its phase, current step, node and the node's
Ready status, the winnode version it is configured with, its age and its last
error. The table shortens long errors; -o json has them whole.

NODE STATUS is the node's Ready condition as kubectl shows it, or Missing when
the instance names a node that does not exist (yet).`,
		Example: `  # Where is every Windows host?
  winnodectl status

  # The same for scripts
  winnodectl status -o json | jq -r '.instances[] | select(.phase != "Ready") | .name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cluster.restConfig()
			if err != nil {
				return err
			}
			c, err := newClient(cfg)
			if err != nil {
				return err
			}
			rows, err := listInstanceRows(cmd.Context(), c)
			switch {
			case errors.Is(err, errNoInstanceAPI):
				// No operator here; nodes of winnodectl add may still be.
				fmt.Fprintf(s.Err, "Note: %v\n", err)
			case err != nil:
				return err
			}
			added, err := listAddedNodes(cmd.Context(), c, rows)
			if err != nil {
				return err
			}
			if output == outputJSON {
				return writeJSON(s.Out, struct {
					Instances []instanceRow `json:"instances"`
					// AddedNodes are Windows nodes that winnodectl add
					// configured: no WindowsInstance stands for them.
					AddedNodes []nodeRow `json:"addedNodes"`
				}{rows, added})
			}
			if len(rows) == 0 && len(added) == 0 {
				fmt.Fprintln(s.Err, "No WindowsInstances found. List a host in ConfigMap windows-instances (namespace winnode-system) or run `winnodectl add HOST`.")
				return nil
			}
			now := time.Now()
			if len(rows) > 0 {
				if err := writeInstanceTable(s.Out, rows, now); err != nil {
					return err
				}
			}
			if len(added) > 0 {
				if len(rows) > 0 {
					fmt.Fprintln(s.Out)
				}
				fmt.Fprintln(s.Out, "Nodes added with winnodectl add (no WindowsInstance):")
				return writeNodeTable(s.Out, added, now)
			}
			return nil
		},
	}
	cluster.add(cmd.Flags())
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}

// errNoInstanceAPI: the cluster has no WindowsInstance CRD (no operator).
var errNoInstanceAPI = errors.New("no WindowsInstance API")

func noInstanceAPI(err error) bool { return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) }

// listInstanceRows reads every WindowsInstance and the Nodes they name.
func listInstanceRows(ctx context.Context, c client.Client) ([]instanceRow, error) {
	var list winnodev1.WindowsInstanceList
	if err := c.List(ctx, &list); err != nil {
		if noInstanceAPI(err) {
			return nil, fmt.Errorf("%w: the cluster does not know WindowsInstances (API group %s): install winnode's CRDs and operator (docs/install.md)", errNoInstanceAPI, winnodev1.GroupVersion.Group)
		}
		return nil, fmt.Errorf("listing WindowsInstances: %w", err)
	}
	rows := make([]instanceRow, 0, len(list.Items))

	for i := range list.Items {
		inst := &list.Items[i]
		var node *corev1.Node
		if name := inst.Status.NodeName; name != "" {
			n := &corev1.Node{}
			switch err := c.Get(ctx, client.ObjectKey{Name: name}, n); {
			case err == nil:
				node = n
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading node %s of WindowsInstance %s: %w", name, inst.Name, err)
			}
		}
		rows = append(rows, newInstanceRow(inst, node))
	}
	return rows, nil
}

// listAddedNodes lists the nodes winnode configured (annotation
// winnode.io/version) that no WindowsInstance names: those of winnodectl add.
func listAddedNodes(ctx context.Context, c client.Client, instances []instanceRow) ([]nodeRow, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	managed := map[string]bool{}
	for _, r := range instances {
		managed[r.Node] = true
	}
	rows := []nodeRow{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, ok := n.Annotations[winnodev1.AnnotationVersion]; ok && !managed[n.Name] {
			rows = append(rows, newNodeRow(n))
		}
	}
	return rows, nil
}
