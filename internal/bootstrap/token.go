package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

const (
	// Group is the extra group every winnode bootstrap token authenticates
	// with (besides system:bootstrappers); RBAC is bound to it (rbac.go).
	Group = "system:bootstrappers:winnode"

	// DefaultTokenTTL is how long a bootstrap token lives when the caller
	// does not say: long enough for a slow host to sync its payload and start
	// the kubelet, short enough that a leaked token is soon worthless.
	// kube-controller-manager's token cleaner deletes it once expired.
	DefaultTokenTTL = time.Hour

	// TokenNamespace is where bootstrap token Secrets live.
	TokenNamespace = metav1.NamespaceSystem
)

// Token is a bootstrap token issued for one WindowsInstance.
//
// Its String method never shows the secret half, so a Token can be logged;
// Value returns the full "<id>.<secret>" for the kubeconfig.
type Token struct {
	// ID is the public half ([a-z0-9]{6}); the Secret is bootstrap-token-<ID>.
	ID string
	// Secret is the private half ([a-z0-9]{16}).
	Secret string
	// Instance is the WindowsInstance the token was issued for.
	Instance string
	// Expiration is when the API server stops accepting the token.
	Expiration time.Time
}

// Value is the bearer token "<id>.<secret>". Never log it.
func (t Token) Value() string { return bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret) }

// String names the token without its secret.
func (t Token) String() string { return fmt.Sprintf("bootstrap token %s", t.ID) }

// SecretName is the name of the token's Secret in kube-system.
func (t Token) SecretName() string { return bootstraputil.BootstrapTokenSecretName(t.ID) }

// Username is the user name a bootstrap token with this ID authenticates as:
// system:bootstrap:<id>. The CSR approver compares a CSR's requester with it.
func Username(tokenID string) string { return bootstrapapi.BootstrapUserPrefix + tokenID }

// TokenIDFromUsername is the inverse of Username: it returns the token ID of
// a system:bootstrap:<id> user, and false for any other user.
func TokenIDFromUsername(username string) (string, bool) {
	if len(username) <= len(bootstrapapi.BootstrapUserPrefix) || username[:len(bootstrapapi.BootstrapUserPrefix)] != bootstrapapi.BootstrapUserPrefix {
		return "", false
	}
	id := username[len(bootstrapapi.BootstrapUserPrefix):]
	if !bootstraputil.IsValidBootstrapTokenID(id) {
		return "", false
	}
	return id, true
}

// Bootstrap token Secrets: create, and delete by name. Neither get nor
// list: the operator never reads kube-system's Secrets (the service
// account tokens of kube-system's controllers are there). It knows the
// tokens it made by the ID recorded in each instance's status, and deletes
// them by the name that ID gives. RBAC cannot limit create to labelled
// objects nor name the random token names; the ValidatingAdmissionPolicy
// that the manifests ship (config/policy) does: the operator may create in
// kube-system only bootstrap tokens of winnode's group and labels, and
// delete nothing else there.
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=secrets,verbs=create;delete
// +kubebuilder:rbac:groups="",namespace=kube-public,resources=configmaps,resourceNames=cluster-info,verbs=get

// CreateToken issues a new bootstrap token for the named WindowsInstance,
// valid for ttl (DefaultTokenTTL when ttl <= 0), usable only for
// authentication, in group Group. It does not revoke older tokens of the
// instance. (The operator uses NewToken and StoreToken, to record the ID
// before the Secret exists.)
func CreateToken(ctx context.Context, c kubernetes.Interface, instance string, ttl time.Duration) (*Token, error) {
	// A token ID collision is astronomically unlikely but would make Create
	// fail with AlreadyExists; try a few fresh tokens before giving up.
	var lastErr error
	for range 3 {
		tok, err := NewToken(instance, ttl)
		if err != nil {
			return nil, err
		}
		err = StoreToken(ctx, c, tok)
		if err == nil {
			return tok, nil
		}
		if !apierrors.IsAlreadyExists(errors.Unwrap(err)) {
			return nil, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("creating a bootstrap token for instance %s: %w", instance, lastErr)
}

// NewToken generates a bootstrap token for the instance, valid for ttl
// (DefaultTokenTTL when ttl <= 0), without storing it: StoreToken makes it
// valid.
func NewToken(instance string, ttl time.Duration) (*Token, error) {
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	value, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return nil, fmt.Errorf("generating a bootstrap token for instance %s: %w", instance, err)
	}
	m := bootstraputil.BootstrapTokenRegexp.FindStringSubmatch(value)
	return &Token{ID: m[1], Secret: m[2], Instance: instance, Expiration: time.Now().Add(ttl).UTC().Truncate(time.Second)}, nil
}

// StoreToken creates the token's Secret in kube-system; from then on the
// API server accepts the token (where bootstrap tokens authenticate).
func StoreToken(ctx context.Context, c kubernetes.Interface, tok *Token) error {
	if _, err := c.CoreV1().Secrets(TokenNamespace).Create(ctx, tokenSecret(tok), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Secret %s/%s for instance %s (does the operator have RBAC to create Secrets in %s?): %w",
			TokenNamespace, tok.SecretName(), tok.Instance, TokenNamespace, err)
	}
	return nil
}

func tokenSecret(t *Token) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      t.SecretName(),
			Namespace: TokenNamespace,
			Labels:    Labels(t.Instance),
		},
		Type: corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenDescriptionKey:      "winnode: kubelet bootstrap token for WindowsInstance " + t.Instance,
			bootstrapapi.BootstrapTokenIDKey:               t.ID,
			bootstrapapi.BootstrapTokenSecretKey:           t.Secret,
			bootstrapapi.BootstrapTokenExpirationKey:       t.Expiration.Format(time.RFC3339),
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      Group,
		},
	}
}

// tokenFromSecret reads a bootstrap token Secret; nil if it is not one.
// (Tests read tokens back with it; the operator cannot: it has no read
// access to kube-system's Secrets.)
func tokenFromSecret(s *corev1.Secret) *Token {
	if s.Type != corev1.SecretTypeBootstrapToken {
		return nil
	}
	id, secret := string(s.Data[bootstrapapi.BootstrapTokenIDKey]), string(s.Data[bootstrapapi.BootstrapTokenSecretKey])
	if !bootstraputil.IsValidBootstrapToken(bootstraputil.TokenFromIDAndSecret(id, secret)) {
		return nil
	}
	t := &Token{ID: id, Secret: secret, Instance: s.Labels[winnodev1.LabelInstance]}
	if exp, err := time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey])); err == nil {
		t.Expiration = exp
	}
	return t
}

// RevokeInstanceToken revokes the instance's bootstrap token with this ID:
// it deletes Secret bootstrap-token-<ID> by name, without reading it (the
// operator may not). The ID is one winnode generated and recorded before
// the Secret was created, and given up when that name was taken; the
// policy the manifests ship refuses the operator the deletion of any other
// kind of Secret in kube-system. A token already gone is not an error.
func RevokeInstanceToken(ctx context.Context, c kubernetes.Interface, instance, tokenID string) error {
	name := bootstraputil.BootstrapTokenSecretName(tokenID)
	err := c.CoreV1().Secrets(TokenNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("revoking bootstrap token %s of instance %s (deleting Secret %s/%s): %w", tokenID, instance, TokenNamespace, name, err)
	}
	return nil
}
