package machineapi

import (
	"context"
	"fmt"
	"slices"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The pre-terminate lifecycle hook (machine.openshift.io's
// spec.lifecycleHooks.preTerminate): the Machine API drains a deleted
// Machine's Node, then waits for every pre-terminate hook to be removed
// before it terminates the VM. winnode's hook keeps the VM up until its
// host is deconfigured (services removed, Node deleted, join credentials
// revoked), so deconfiguration does not race the VM's termination.
var hook = machinev1.LifecycleHook{Name: "WinnodeDeconfigure", Owner: "winnode-operator"}

// hasHook reports whether m carries winnode's hook.
func hasHook(m *machinev1.Machine) bool {
	return slices.ContainsFunc(m.Spec.LifecycleHooks.PreTerminate, func(h machinev1.LifecycleHook) bool { return h.Name == hook.Name })
}

// SetHook puts winnode's hook on m (before its instance exists) or takes it
// off (once the instance is gone).
func (r *MachineReconciler) SetHook(ctx context.Context, obj client.Object, on bool) error {
	m := obj.(*machinev1.Machine)
	if hasHook(m) == on {
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if on {
		m.Spec.LifecycleHooks.PreTerminate = append(m.Spec.LifecycleHooks.PreTerminate, hook)
	} else {
		m.Spec.LifecycleHooks.PreTerminate = slices.DeleteFunc(m.Spec.LifecycleHooks.PreTerminate, func(h machinev1.LifecycleHook) bool { return h.Name == hook.Name })
	}
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting the pre-terminate hook %s of Machine %s (%t): %w", hook.Name, m.Name, on, err))
	}
	return nil
}
