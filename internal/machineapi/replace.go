package machineapi

import (
	"context"
	"fmt"
	"time"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// After a key rotation the operator logs in with the new key only. A
// Machine's host got its key from the user data it booted with, which the
// cloud keeps with the VM: it will never accept the new key. Such a
// Machine — one whose host accepted a key before (status.keyFingerprint)
// and now refuses the operator's — is deleted, when a MachineSet owns it,
// so that the MachineSet replaces it with a Machine booted from the
// rotated windows-user-data. One at a time: no Machine is deleted while
// another Windows Machine is being deleted, so capacity drops by one at
// most. A host that never accepted any key (user data that did not run) is
// left as it is, reported by its instance's Reachable condition: deleting
// it would only boot another such host, again and again.

// keyRefused reports whether inst's host accepted a key once
// (status.keyFingerprint) and refuses the operator's current key (current,
// its fingerprint), which differs from that one: the rotation left the
// host behind. A host that refuses the very key it accepted before has an
// authentication problem of its own (its administrators_authorized_keys
// changed, say): its instance's Reachable condition reports it
// (AuthFailed), and deleting the Machine would not cure it.
func keyRefused(inst *winnodev1.WindowsInstance, current string) bool {
	c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionReachable)
	return inst.Status.KeyFingerprint != "" && current != "" && inst.Status.KeyFingerprint != current &&
		c != nil && c.Status == metav1.ConditionFalse && c.Reason == winnodev1.ReasonAuthFailed
}

// currentKey is the fingerprint of the operator's current SSH key: the
// annotation the keys controller puts on the user data Secret, which the
// copy in openshift-machine-api carries too ("" when not known yet). It is
// read directly (the operator may get that one Secret only, not watch the
// namespace's).
func (r *MachineReconciler) currentKey(ctx context.Context) (string, error) {
	var s corev1.Secret
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: r.UserDataSecret}, &s)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Secret %s/%s for the operator's current key: %w", Namespace, r.UserDataSecret, err)
	}
	return s.Annotations[winnodev1.AnnotationKeyFingerprint], nil
}

// ownedByMachineSet reports whether a MachineSet controls m.
func ownedByMachineSet(m *machinev1.Machine) bool {
	ref := metav1.GetControllerOf(m)
	return ref != nil && ref.Kind == "MachineSet" && ref.APIVersion == machinev1.GroupVersion.String()
}

// waitTurn is how soon a Machine whose replacement waits for another's
// deletion is looked at again (nothing about it changes meanwhile).
const waitTurn = 10 * time.Second

// replaceIfKeyRefused deletes Machine m when its host refuses the rotated
// key and no other Windows Machine is being deleted; otherwise it says
// when to look again.
func (r *MachineReconciler) replaceIfKeyRefused(ctx context.Context, m *machinev1.Machine, inst *winnodev1.WindowsInstance) (reconcile.Result, error) {
	if inst == nil || inst.Status.KeyFingerprint == "" || !ownedByMachineSet(m) {
		return reconcile.Result{}, nil
	}
	current, err := r.currentKey(ctx)
	if err != nil || !keyRefused(inst, current) {
		return reconcile.Result{}, err
	}
	var list machinev1.MachineList
	if err := r.Machines.List(ctx, &list, client.InNamespace(m.Namespace), client.MatchingLabels{LabelOSID: "Windows"}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing Windows Machines: %w", err)
	}
	for i := range list.Items {
		if o := &list.Items[i]; !o.DeletionTimestamp.IsZero() && hasHook(o) {
			return reconcile.Result{RequeueAfter: waitTurn}, nil // one at a time
		}
	}
	ctrl.LoggerFrom(ctx).Info("host refuses the operator's rotated key; deleting the Machine so its MachineSet replaces it", "machine", m.Name, "acceptedKey", inst.Status.KeyFingerprint)
	if err := r.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("deleting Machine %s, whose host refuses the rotated key: %w", m.Name, err)
	}
	r.Recorder.Eventf(m, inst, corev1.EventTypeNormal, "MachineReplaced", "Delete",
		"the host of Machine %s accepted key %s and refuses the operator's rotated key: Machine deleted so that its MachineSet replaces it with one booted from the new windows-user-data", m.Name, inst.Status.KeyFingerprint)
	return reconcile.Result{}, nil
}
