package capisource

import (
	"context"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hookAnnotation is winnode's pre-terminate hook on a Cluster API Machine
// (annotation prefix pre-terminate.delete.hook.machine.cluster.x-k8s.io,
// value the hook's owner): Cluster API drains a deleted Machine's Node,
// then waits for every pre-terminate hook to be removed before it deletes
// the Machine's infrastructure (the VM) and its Node. winnode's hook keeps
// the VM up until its host is deconfigured.
const hookAnnotation = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/winnode-deconfigure"

// hookOwner is the annotation's value: who removes the hook.
const hookOwner = "winnode-operator"

// SetHook puts winnode's hook on m (before its instance exists) or takes it
// off (once the instance is gone).
func (r *MachineReconciler) SetHook(ctx context.Context, obj client.Object, on bool) error {
	m := obj.(*clusterv1.Machine)
	if _, has := m.Annotations[hookAnnotation]; has == on {
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if on {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[hookAnnotation] = hookOwner
	} else {
		delete(m.Annotations, hookAnnotation)
	}
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting the pre-terminate hook of Machine %s/%s (%t): %w", m.Namespace, m.Name, on, err))
	}
	return nil
}
