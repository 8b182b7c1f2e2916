package instance

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
)

// The upgrade rollout's watch wiring. Which upgrades may take their Node
// out of service, and when, is the engine's (configure.Rollout, in
// internal/configure/upgrade.go); this file only wakes the upgrades waiting
// for their turn when a place in the rollout frees up.

// waitingUpgrades enqueues the instances whose upgrade waits for its turn.
func (r *Reconciler) waitingUpgrades(ctx context.Context, _ client.Object) []reconcile.Request {
	var list winnodev1.WindowsInstanceList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // read only: no copy of the fleet
		return nil
	}
	var reqs []reconcile.Request
	for _, i := range list.Items {
		if c := meta.FindStatusCondition(i.Status.Conditions, winnodev1.ConditionConfigured); c != nil && c.Reason == winnodev1.ReasonUpgradeWaiting {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&i)})
		}
	}
	return reqs
}

// leftUnavailable lets through an instance that stops counting as out of
// service for the rollout (or is deleted).
type leftUnavailable struct{ predicate.Funcs }

func (leftUnavailable) Create(event.CreateEvent) bool   { return false }
func (leftUnavailable) Delete(event.DeleteEvent) bool   { return true }
func (leftUnavailable) Generic(event.GenericEvent) bool { return false }
func (leftUnavailable) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*winnodev1.WindowsInstance)
	n, ok2 := e.ObjectNew.(*winnodev1.WindowsInstance)
	return ok1 && ok2 && configure.Unavailable(o) && !configure.Unavailable(n)
}
