package machinesource

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// Kind is what one kind of Machine (OpenShift's, Cluster API's) tells the
// lifecycle that Reconcile runs for all of them.
type Kind interface {
	// Get reads the Machine; an error matching apierrors.IsNotFound when it
	// is gone.
	Get(ctx context.Context, key types.NamespacedName) (client.Object, error)
	// InstanceName names the Machine's WindowsInstance.
	InstanceName(key types.NamespacedName) string
	// Provisioned is the Machine's address and provider ID when winnode
	// configures it and it is provisioned; otherwise why not (yet):
	// NotWindows, Ignored or NotProvisioned ("" when provisioned).
	Provisioned(m client.Object) (Machine, string)
	// SetHook puts winnode's pre-terminate hook on the Machine (on) or takes
	// it off: the hook holds the Machine's VM until its host is clean.
	SetHook(ctx context.Context, m client.Object, on bool) error
}

// Reconcile brings Machine key's instance in line with the Machine:
//
//   - a Machine gone (its hook removed by hand, or gone while the operator
//     did not run) → its instance deleted;
//   - a Machine being deleted → its instance deleted (deconfigured through
//     its finalizer); once the instance is gone, the hook comes off and the
//     Machine's VM may go;
//   - a provisioned Machine that winnode configures → the hook put on, then
//     the instance created or its spec updated;
//   - any other Machine → nothing but a count in
//     winnode_machines_left_alone_total, by reason.
//
// It returns the Machine and its instance as they were read when the
// instance was ensured (nil Machine otherwise), for steps of the kind's own.
func (s *Instances) Reconcile(ctx context.Context, kind Kind, key types.NamespacedName) (client.Object, *winnodev1.WindowsInstance, error) {
	m, err := kind.Get(ctx, key)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, err
	}
	name := kind.InstanceName(key)
	inst, ierr := s.of(ctx, name, key)
	if ierr != nil {
		return nil, nil, ierr
	}
	switch {
	case apierrors.IsNotFound(err):
		if inst != nil {
			return nil, nil, s.delete(ctx, nil, inst)
		}
		return nil, nil, nil
	case !m.GetDeletionTimestamp().IsZero():
		if inst == nil {
			return nil, nil, kind.SetHook(ctx, m, false)
		}
		return nil, nil, s.delete(ctx, m, inst)
	}
	want, why := kind.Provisioned(m)
	if why != "" {
		leftAlone.WithLabelValues(s.Source, why).Inc()
		return nil, nil, nil // its next change brings it back
	}
	if err := kind.SetHook(ctx, m, true); err != nil {
		return nil, nil, err
	}
	want.Object, want.Instance = m, name
	return m, inst, s.ensure(ctx, want, inst)
}
