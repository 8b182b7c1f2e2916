package machineapi

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// UserDataReconciler keeps a copy of the operator's user data Secret in
// openshift-machine-api, where a MachineSet's providerSpec can reference it
// (userDataSecret: windows-user-data): a Machine reads its user data from
// its own namespace. The copy follows the original (a rotated key reaches
// Machines created from then on); it carries the original's annotations
// (the key fingerprint among them) and is never deleted by winnode, since
// MachineSets may reference it.
type UserDataReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Options
}

// Reconcile copies the original to openshift-machine-api when they differ.
func (r *UserDataReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var orig corev1.Secret
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.OperatorNamespace, Name: r.UserDataSecret}, &orig)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil // the keys controller writes it once the key exists
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	data := orig.Data[r.UserDataKey]
	var dup corev1.Secret
	err = r.APIReader.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: r.UserDataSecret}, &dup)
	switch {
	case apierrors.IsNotFound(err):
		dup = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: r.UserDataSecret, Annotations: orig.Annotations},
			Data:       map[string][]byte{r.UserDataKey: data},
		}
		err = r.Client.Create(ctx, &dup)
	case err != nil:
	case bytes.Equal(dup.Data[r.UserDataKey], data) && maps.Equal(dup.Annotations, orig.Annotations):
		return reconcile.Result{}, nil
	default:
		dup.Data = map[string][]byte{r.UserDataKey: data}
		dup.Annotations = orig.Annotations
		err = r.Client.Update(ctx, &dup)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("writing Secret %s/%s: %w", Namespace, r.UserDataSecret, err)
	}
	ctrl.LoggerFrom(ctx).Info("user data copied for MachineSets", "secret", Namespace+"/"+r.UserDataSecret)
	return reconcile.Result{}, nil
}

// setupUserData watches the original Secret (the manager's cache covers
// the operator namespace).
func setupUserData(mgr ctrl.Manager, opts Options) error {
	r := &UserDataReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Options: opts}
	original := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == opts.OperatorNamespace && o.GetName() == opts.UserDataSecret
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine-api-user-data").
		For(&corev1.Secret{}, builder.WithPredicates(original)).
		Complete(r)
}
