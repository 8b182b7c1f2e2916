// Package keys keeps the user data Secret (windows-user-data) in step with
// the operator's SSH key (Secret cloud-private-key): Reconciler.
package keys

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/report"
	"github.com/winnode/winnode/internal/sshkey"
)

// The user data Secret the keys step writes (names are a contract with
// administrators; the key Secret's are in internal/sshkey).
const (
	// UserDataSecret, in the operator namespace, holds the user data script
	// (bootstrap.UserData) under UserDataKey, written by the Reconciler.
	// Its annotation winnodev1.AnnotationKeyFingerprint is the fingerprint of
	// the public key inside.
	UserDataSecret = "windows-user-data"
	UserDataKey    = "userData"
)

// Event reasons (events.k8s.io/v1) on the cloud-private-key Secret.
const (
	EventReasonInvalidPrivateKey = "InvalidPrivateKey"
	EventReasonUserDataUpdated   = "UserDataUpdated"
)

// Reconciler keeps Secret windows-user-data in step with Secret
// cloud-private-key: on every change of the key (creation, rotation) it
// renders the user data for the new public key. An unusable key gets one
// Warning event on the key Secret and leaves the user data as it was; the
// instance reconciler reports the same error on each instance
// (sshkey.LoadSigner).
// The user data Secret is owned by the key Secret, so deleting the key
// deletes it.
//
// Its events are written one per change (report.Event): a recorder would fold
// a second, different complaint about the same Secret into the first one's
// series and keep the first message.
type Reconciler struct {
	Client    client.Client
	Namespace string
}

// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=secrets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=secrets,resourceNames=windows-user-data,verbs=update;patch
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=secrets/finalizers,resourceNames=cloud-private-key,verbs=update
// +kubebuilder:rbac:groups="";events.k8s.io,namespace=winnode-system,resources=events,verbs=create;patch
// Events about cluster-scoped objects (WindowsInstances) go to namespace default.
// +kubebuilder:rbac:groups="";events.k8s.io,namespace=default,resources=events,verbs=create;patch

// Reconcile renders the user data of the current key.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var key corev1.Secret
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: sshkey.PrivateKeySecret}, &key)
	if apierrors.IsNotFound(err) {
		log.Info("no private key Secret; nothing to render", "secret", sshkey.PrivateKeySecret)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	signer, err := sshkey.ParsePrivateKey(key.Data[sshkey.PrivateKeyKey])
	if err != nil {
		log.Info("unusable private key; user data left as it was", "secret", sshkey.PrivateKeySecret, "reason", err.Error())
		if err := report.Event(ctx, r.Client, &key, corev1.EventTypeWarning, EventReasonInvalidPrivateKey, report.ActionParse, err.Error()); err != nil {
			log.Error(err, "reporting the unusable key")
		}
		return reconcile.Result{}, nil // wait for the Secret to change
	}
	userData, err := bootstrap.UserData(signer.PublicKey())
	if err != nil {
		return reconcile.Result{}, err
	}
	fp := sshkey.KeyFingerprint(signer)

	ud := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: UserDataSecret}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, ud, func() error {
		if ud.Annotations == nil {
			ud.Annotations = map[string]string{}
		}
		ud.Annotations[winnodev1.AnnotationKeyFingerprint] = fp
		if ud.Labels == nil {
			ud.Labels = map[string]string{}
		}
		ud.Labels["app.kubernetes.io/managed-by"] = "winnode-operator"
		ud.Type = corev1.SecretTypeOpaque
		ud.Data = map[string][]byte{UserDataKey: userData}
		return controllerutil.SetControllerReference(&key, ud, r.Client.Scheme())
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("writing Secret %s/%s: %w", r.Namespace, UserDataSecret, err)
	}
	if op != controllerutil.OperationResultNone {
		log.Info("user data rendered", "secret", UserDataSecret, "operation", op, "keyFingerprint", fp)
		if err := report.Event(ctx, r.Client, &key, corev1.EventTypeNormal, EventReasonUserDataUpdated, report.ActionUpdate,
			fmt.Sprintf("Secret %s rendered for the public key %s", UserDataSecret, fp)); err != nil {
			log.Error(err, "reporting the rendered user data")
		}
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches both Secrets (a deleted or edited user data
// Secret is rendered again) and reconciles one fixed key.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && (o.GetName() == sshkey.PrivateKeySecret || o.GetName() == UserDataSecret)
	})
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: sshkey.PrivateKeySecret}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("keys").
		Watches(&corev1.Secret{}, one, builder.WithPredicates(ours)).
		Complete(r)
}
