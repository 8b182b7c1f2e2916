package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// The ServiceAccount form of join credentials, for API servers that run
// without --enable-bootstrap-token-auth (OpenShift's, several managed
// offerings'): there a bootstrap token never authenticates, but every API
// server accepts ServiceAccount tokens. Per instance:
//
//   - a ServiceAccount winnode-join-<instance> in the operator's namespace,
//     labelled winnode.io/instance=<instance>;
//   - its place among the subjects of ClusterRoleBinding
//     winnode-join-service-accounts (joinbinding.go), which binds them to
//     ClusterRole system:node-bootstrapper: it may create CSRs and nothing
//     else;
//   - a token from the TokenRequest API (serviceaccounts/token), valid for
//     at most an hour, written only into the host's bootstrap kubeconfig.
//
// The API server checks, for every request, that a ServiceAccount token's
// ServiceAccount still exists with the same UID: deleting the ServiceAccount
// revokes the token at once. The configurer does that once the Node is Ready
// and when the instance is removed, where it revokes bootstrap tokens.

const (
	// ServiceAccountTokenTTL is the lifetime asked of TokenRequest: as for
	// bootstrap tokens, long enough for a slow host to sync and start the
	// kubelet. The API server refuses less than 10 minutes and may cap it.
	ServiceAccountTokenTTL    = time.Hour
	minServiceAccountTokenTTL = 10 * time.Minute

	// serviceAccountPrefix starts the name of every join ServiceAccount.
	serviceAccountPrefix = "winnode-join-"
	// serviceAccountUserPrefix is how the API server names a ServiceAccount
	// user: system:serviceaccount:<namespace>:<name>.
	serviceAccountUserPrefix = "system:serviceaccount:"

	// Annotations on the join ServiceAccount (never secret): when its
	// current token expires and the sha256 of the kubeconfig that holds it,
	// so that a configuration resumed after a crash keeps the kubeconfig the
	// host already has instead of uploading a new one.
	annotationTokenExpires     = "winnode.io/join-token-expires"
	annotationKubeconfigSHA256 = "winnode.io/join-kubeconfig-sha256"
)

// ServiceAccountName is the join ServiceAccount of an instance:
// winnode-join-<instance>, or, for an instance whose name would make it
// longer than an object name may be, winnode-join-<the name as
// winnodev1.LabelValue writes it>.
func ServiceAccountName(instance string) string {
	if name := serviceAccountPrefix + instance; len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	return serviceAccountPrefix + winnodev1.LabelValue(instance)
}

// ServiceAccountGroup is the group every ServiceAccount of namespace is in.
func ServiceAccountGroup(namespace string) string { return "system:serviceaccounts:" + namespace }

// ServiceAccountFromUsername is the ServiceAccount whose tokens
// authenticate as username (system:serviceaccount:<namespace>:<name>),
// when it is a join ServiceAccount of namespace: its name, and false for
// any other user (another namespace's ServiceAccount included). The CSR
// approver compares a CSR's requester with it.
func ServiceAccountFromUsername(namespace, username string) (string, bool) {
	name, ok := strings.CutPrefix(username, serviceAccountUserPrefix+namespace+":")
	if !ok || !strings.HasPrefix(name, serviceAccountPrefix) || strings.Contains(name, ":") {
		return "", false
	}
	return name, true
}

// ServiceAccountToken is a TokenRequest token of an instance's join
// ServiceAccount. Its String method never shows the token.
type ServiceAccountToken struct {
	Namespace, Name, Instance string
	// Value is the bearer token (a JWT). Never log it.
	Value      string
	Expiration time.Time
}

// String names the token without its value.
func (t ServiceAccountToken) String() string {
	return fmt.Sprintf("token of ServiceAccount %s/%s", t.Namespace, t.Name)
}

// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=serviceaccounts,verbs=get;create;delete;patch
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=serviceaccounts/token,verbs=create
// The binding's rule is in joinbinding.go.

// CreateServiceAccountToken makes sure the instance's join ServiceAccount
// exists and is bound, and requests a token for it valid for ttl
// (ServiceAccountTokenTTL when ttl <= 0; never more than an hour).
func CreateServiceAccountToken(ctx context.Context, c kubernetes.Interface, namespace, instance string, ttl time.Duration) (*ServiceAccountToken, error) {
	if ttl <= 0 || ttl > ServiceAccountTokenTTL {
		ttl = ServiceAccountTokenTTL
	}
	ttl = max(ttl, minServiceAccountTokenTTL)
	name := ServiceAccountName(instance)
	if err := ensureJoinServiceAccount(ctx, c, namespace, instance); err != nil {
		return nil, err
	}
	if err := addJoinSubject(ctx, c, namespace, instance); err != nil {
		return nil, err
	}
	secs := int64(ttl / time.Second)
	tr, err := c.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for ServiceAccount %s/%s of instance %s (TokenRequest API): %w", namespace, name, instance, err)
	}
	return &ServiceAccountToken{Namespace: namespace, Name: name, Instance: instance,
		Value: tr.Status.Token, Expiration: tr.Status.ExpirationTimestamp.UTC()}, nil
}

// ManagedBy is the value of app.kubernetes.io/managed-by on what the
// operator makes for an instance.
const ManagedBy = "winnode-operator"

// Labels are the labels of what the operator makes for an instance (its
// bootstrap token Secret, its join ServiceAccount): winnode.io/instance
// (the instance's name as a label value) and app.kubernetes.io/managed-by.
// They select; the instance's status names each object whole.
func Labels(instance string) map[string]string {
	return map[string]string{winnodev1.LabelInstance: winnodev1.LabelValue(instance), "app.kubernetes.io/managed-by": ManagedBy}
}

func ensureJoinServiceAccount(ctx context.Context, c kubernetes.Interface, namespace, instance string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName(instance), Namespace: namespace, Labels: Labels(instance)}}
	got, err := c.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = c.CoreV1().ServiceAccounts(namespace).Get(ctx, sa.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating ServiceAccount %s/%s for instance %s (does the namespace exist, and may the operator create ServiceAccounts there?): %w", namespace, sa.Name, instance, err)
	}
	if got.Labels[winnodev1.LabelInstance] != winnodev1.LabelValue(instance) {
		return fmt.Errorf("ServiceAccount %s/%s exists but was not made by winnode for instance %s (label %s): delete or rename it", namespace, sa.Name, instance, winnodev1.LabelInstance)
	}
	return nil
}

// RecordServiceAccountKubeconfig notes on the join ServiceAccount when its
// token expires and the digest of the kubeconfig that carries it (see
// ServiceAccountKubeconfigCurrent).
func RecordServiceAccountKubeconfig(ctx context.Context, c kubernetes.Interface, tok *ServiceAccountToken, kubeconfigSHA256 string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		annotationTokenExpires, tok.Expiration.Format(time.RFC3339), annotationKubeconfigSHA256, kubeconfigSHA256)
	if _, err := c.CoreV1().ServiceAccounts(tok.Namespace).Patch(ctx, tok.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotating ServiceAccount %s/%s of instance %s: %w", tok.Namespace, tok.Name, tok.Instance, err)
	}
	return nil
}

// ServiceAccountKubeconfigCurrent reports whether the kubeconfig of digest
// kubeconfigSHA256 holds a token of the instance's join ServiceAccount that
// is still valid for at least minValid: then a resumed configuration keeps
// it rather than uploading a new one.
func ServiceAccountKubeconfigCurrent(ctx context.Context, c kubernetes.Interface, namespace, instance, kubeconfigSHA256 string, minValid time.Duration) (bool, error) {
	sa, err := c.CoreV1().ServiceAccounts(namespace).Get(ctx, ServiceAccountName(instance), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading ServiceAccount %s/%s of instance %s: %w", namespace, ServiceAccountName(instance), instance, err)
	}
	exp, err := time.Parse(time.RFC3339, sa.Annotations[annotationTokenExpires])
	return err == nil && sa.Labels[winnodev1.LabelInstance] == winnodev1.LabelValue(instance) &&
		sa.Annotations[annotationKubeconfigSHA256] == kubeconfigSHA256 && time.Until(exp) > minValid, nil
}

// RevokeServiceAccount deletes the instance's join ServiceAccount (which
// revokes every token of it), only when labelled as the instance's (winnode
// deletes only what it made), then takes it out of the binding's subjects.
// Objects already gone are not an error. A crash in between leaves a
// subject of no ServiceAccount, which the next update of the binding prunes.
func RevokeServiceAccount(ctx context.Context, c kubernetes.Interface, namespace, instance string) error {
	sas := c.CoreV1().ServiceAccounts(namespace)
	if err := deleteIfOurs(ctx, instance, fmt.Sprintf("ServiceAccount %s/%s", namespace, ServiceAccountName(instance)),
		func() (metav1.Object, error) { return sas.Get(ctx, ServiceAccountName(instance), metav1.GetOptions{}) },
		func(o metav1.DeleteOptions) error { return sas.Delete(ctx, ServiceAccountName(instance), o) }); err != nil {
		return err
	}
	return removeJoinSubject(ctx, c, namespace, instance)
}

// deleteIfOurs deletes the object get returns when it carries the
// instance's label, with a UID precondition (so an object of the same name
// made meanwhile by someone else is not deleted).
func deleteIfOurs(ctx context.Context, instance, what string, get func() (metav1.Object, error), del func(metav1.DeleteOptions) error) error {
	o, err := get()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s of instance %s to revoke it: %w", what, instance, err)
	}
	if o.GetLabels()[winnodev1.LabelInstance] != winnodev1.LabelValue(instance) {
		return nil // not winnode's: left alone
	}
	uid := o.GetUID()
	err = del(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("revoking the join credentials of instance %s (deleting %s): %w", instance, what, err)
	}
	return nil
}
