package view

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// ErrNoInstanceAPI: the cluster has no WindowsInstance CRD (no operator).
var ErrNoInstanceAPI = errors.New("no WindowsInstance API")

func NoInstanceAPI(err error) bool { return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) }

// ListInstanceRows reads every WindowsInstance and the Nodes they name.
func ListInstanceRows(ctx context.Context, c client.Client) ([]InstanceRow, error) {
	var list winnodev1.WindowsInstanceList
	if err := c.List(ctx, &list); err != nil {
		if NoInstanceAPI(err) {
			return nil, fmt.Errorf("%w: the cluster does not know WindowsInstances (API group %s): install winnode's CRDs and operator (docs/install.md)", ErrNoInstanceAPI, winnodev1.GroupVersion.Group)
		}
		return nil, fmt.Errorf("listing WindowsInstances: %w", err)
	}
	rows := make([]InstanceRow, 0, len(list.Items))

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
		rows = append(rows, NewInstanceRow(inst, node))
	}
	return rows, nil
}
