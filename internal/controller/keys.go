package controller

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"
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
)

// The Secrets of the keys step (names are a contract with administrators).
const (
	// PrivateKeySecret, in the operator namespace, holds the SSH private key
	// the operator logs in to every host with, under PrivateKeyKey.
	PrivateKeySecret = "cloud-private-key"
	PrivateKeyKey    = "private-key.pem"
	// UserDataSecret, in the operator namespace, holds the user data script
	// (bootstrap.UserData) under UserDataKey, written by the KeysReconciler.
	// Its annotation winnodev1.AnnotationKeyFingerprint is the fingerprint of
	// the public key inside.
	UserDataSecret = "windows-user-data"
	UserDataKey    = "userData"
)

// MinRSABits is the smallest RSA key the operator accepts.
const MinRSABits = 2048

// KeyError says why there is no usable private key. Reason is a condition
// reason (winnodev1.ReasonNoPrivateKey or winnodev1.ReasonInvalidPrivateKey)
// the instance reconciler can put on its Reachable condition; the message
// never contains key material.
type KeyError struct {
	Reason string
	Err    error
}

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// ParsePrivateKey parses an SSH private key in any PEM form
// golang.org/x/crypto/ssh reads (PKCS#1, PKCS#8, OpenSSH) and accepts only
// RSA of at least MinRSABits bits or ed25519. Errors are *KeyError with
// reason InvalidPrivateKey and say what to do.
func ParsePrivateKey(pemBytes []byte) (ssh.Signer, error) {
	invalid := func(format string, args ...any) error {
		return &KeyError{Reason: winnodev1.ReasonInvalidPrivateKey, Err: fmt.Errorf(format, args...)}
	}
	if len(pemBytes) == 0 {
		return nil, invalid("Secret %s key %s is empty; put a PEM private key there (RSA of at least %d bits or ed25519)", PrivateKeySecret, PrivateKeyKey, MinRSABits)
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		var pass *ssh.PassphraseMissingError
		if errors.As(err, &pass) {
			return nil, invalid("Secret %s key %s is protected by a passphrase; store it unencrypted (ssh-keygen -p -N '' -f KEY)", PrivateKeySecret, PrivateKeyKey)
		}
		// The parser's message never quotes the key.
		return nil, invalid("Secret %s key %s is not a PEM private key the operator can read (PKCS#1, PKCS#8 or OpenSSH): %v", PrivateKeySecret, PrivateKeyKey, err)
	}
	switch pub := signer.PublicKey(); pub.Type() {
	case ssh.KeyAlgoED25519:
		return signer, nil
	case ssh.KeyAlgoRSA:
		cpk, ok := pub.(ssh.CryptoPublicKey)
		if !ok {
			return nil, invalid("Secret %s key %s: cannot read the RSA key's size", PrivateKeySecret, PrivateKeyKey)
		}
		rsaPub, ok := cpk.CryptoPublicKey().(*rsa.PublicKey)
		if !ok {
			return nil, invalid("Secret %s key %s: cannot read the RSA key's size", PrivateKeySecret, PrivateKeyKey)
		}
		if bits := rsaPub.N.BitLen(); bits < MinRSABits {
			return nil, invalid("Secret %s key %s is a %d-bit RSA key, too weak; use RSA of at least %d bits or ed25519 (ssh-keygen -t ed25519)", PrivateKeySecret, PrivateKeyKey, bits, MinRSABits)
		}
		return signer, nil
	default:
		return nil, invalid("Secret %s key %s is a %s key; the operator accepts RSA (at least %d bits) or ed25519", PrivateKeySecret, PrivateKeyKey, pub.Type(), MinRSABits)
	}
}

// LoadSigner reads and checks the operator's private key from Secret
// cloud-private-key in namespace. This is how the instance reconciler (and
// winnodectl ssh) learn the signer: call it at the start of each reconcile,
// so a rotated key is used at once. Errors are *KeyError: reason
// NoPrivateKey when the Secret or key is missing, InvalidPrivateKey when the
// key is unusable.
func LoadSigner(ctx context.Context, c client.Reader, namespace string) (ssh.Signer, error) {
	var s corev1.Secret
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: PrivateKeySecret}, &s)
	if apierrors.IsNotFound(err) {
		return nil, &KeyError{Reason: winnodev1.ReasonNoPrivateKey, Err: fmt.Errorf(
			"the Secret %s/%s does not exist; create it with the operator's SSH private key: kubectl -n %s create secret generic %s --from-file=%s=KEY",
			namespace, PrivateKeySecret, namespace, PrivateKeySecret, PrivateKeyKey)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, PrivateKeySecret, err)
	}
	data, ok := s.Data[PrivateKeyKey]
	if !ok {
		return nil, &KeyError{Reason: winnodev1.ReasonNoPrivateKey, Err: fmt.Errorf(
			"the Secret %s/%s has no key %s; put the operator's SSH private key under that key", namespace, PrivateKeySecret, PrivateKeyKey)}
	}
	return ParsePrivateKey(data)
}

// KeyFingerprint is the SHA256 fingerprint ("SHA256:...") of the signer's
// public key: the value of the user data Secret's
// winnodev1.AnnotationKeyFingerprint annotation, and what the instance
// reconciler records in Status.KeyFingerprint. A difference between the two
// means the key was rotated and the host must be given the new one.
func KeyFingerprint(s ssh.Signer) string { return ssh.FingerprintSHA256(s.PublicKey()) }

// KeysReconciler keeps Secret windows-user-data in step with Secret
// cloud-private-key: on every change of the key (creation, rotation) it
// renders the user data for the new public key. An unusable key gets one
// Warning event on the key Secret and leaves the user data as it was; the
// instance reconciler reports the same error on each instance (LoadSigner).
// The user data Secret is owned by the key Secret, so deleting the key
// deletes it.
//
// Its events are written one per change (createEvent): a recorder would fold
// a second, different complaint about the same Secret into the first one's
// series and keep the first message.
type KeysReconciler struct {
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
func (r *KeysReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var key corev1.Secret
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: PrivateKeySecret}, &key)
	if apierrors.IsNotFound(err) {
		log.Info("no private key Secret; nothing to render", "secret", PrivateKeySecret)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	signer, err := ParsePrivateKey(key.Data[PrivateKeyKey])
	if err != nil {
		log.Info("unusable private key; user data left as it was", "secret", PrivateKeySecret, "reason", err.Error())
		if err := createEvent(ctx, r.Client, &key, corev1.EventTypeWarning, EventReasonInvalidPrivateKey, ActionParse, err.Error()); err != nil {
			log.Error(err, "reporting the unusable key")
		}
		return reconcile.Result{}, nil // wait for the Secret to change
	}
	userData, err := bootstrap.UserData(signer.PublicKey())
	if err != nil {
		return reconcile.Result{}, err
	}
	fp := KeyFingerprint(signer)

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
		if err := createEvent(ctx, r.Client, &key, corev1.EventTypeNormal, EventReasonUserDataUpdated, ActionUpdate,
			fmt.Sprintf("Secret %s rendered for the public key %s", UserDataSecret, fp)); err != nil {
			log.Error(err, "reporting the rendered user data")
		}
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches both Secrets (a deleted or edited user data
// Secret is rendered again) and reconciles one fixed key.
func (r *KeysReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && (o.GetName() == PrivateKeySecret || o.GetName() == UserDataSecret)
	})
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: PrivateKeySecret}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("keys").
		Watches(&corev1.Secret{}, one, builder.WithPredicates(ours)).
		Complete(r)
}
