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

// addHook puts winnode's hook on m, before its instance exists.
func (r *MachineReconciler) addHook(ctx context.Context, m *machinev1.Machine) error {
	if hasHook(m) {
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	m.Spec.LifecycleHooks.PreTerminate = append(m.Spec.LifecycleHooks.PreTerminate, hook)
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("adding the pre-terminate hook %s to Machine %s: %w", hook.Name, m.Name, err)
	}
	return nil
}

// removeHook takes winnode's hook off m, once its instance is gone.
func (r *MachineReconciler) removeHook(ctx context.Context, m *machinev1.Machine) error {
	if !hasHook(m) {
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	m.Spec.LifecycleHooks.PreTerminate = slices.DeleteFunc(m.Spec.LifecycleHooks.PreTerminate, func(h machinev1.LifecycleHook) bool { return h.Name == hook.Name })
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the pre-terminate hook %s from Machine %s: %w", hook.Name, m.Name, err))
	}
	return nil
}
