package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// ClusterAPITokenTTL is the lifetime of a bootstrap token for a host of a
// Cluster API workload cluster: that of Cluster API's kubeadm bootstrap
// provider (its DefaultTokenTTL), which keeps a token alive while its
// Machine has not joined by moving the token's expiration on
// (RefreshToken), rather than issuing long-lived tokens.
const ClusterAPITokenTTL = 15 * time.Minute

// RefreshToken keeps instance's bootstrap token id alive while its host has
// not joined, as Cluster API's kubeadm bootstrap provider does: a token
// that would expire within five sixths of ttl gets its expiration moved to
// now + ttl; one that expires later is left as it is. Callers look again
// every third of ttl, so a token gets two chances to be refreshed before it
// runs out. It returns the token's expiration; a token that is gone, has
// run out, or is not the instance's is an error (its host needs a new
// one). The Secret is patched with its resourceVersion as a precondition.
func RefreshToken(ctx context.Context, c kubernetes.Interface, instance, id string, ttl time.Duration) (time.Time, error) {
	name := bootstraputil.BootstrapTokenSecretName(id)
	s, err := c.CoreV1().Secrets(TokenNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("reading bootstrap token %s of instance %s to refresh it: %w", id, instance, err)
	}
	if s.Type != corev1.SecretTypeBootstrapToken || s.Labels[winnodev1.LabelInstance] != instance {
		return time.Time{}, fmt.Errorf("bootstrap token refresh: Secret %s/%s is not the bootstrap token of instance %s", TokenNamespace, name, instance)
	}
	exp, err := time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]))
	now := time.Now()
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("bootstrap token %s of instance %s: expiration: %w", id, instance, err)
	case !exp.After(now):
		return exp, fmt.Errorf("bootstrap token %s of instance %s expired at %s", id, instance, exp.Format(time.RFC3339))
	case exp.After(now.Add(ttl * 5 / 6)):
		return exp, nil
	}
	exp = now.Add(ttl).UTC().Truncate(time.Second)
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": s.ResourceVersion},
		"data":     map[string][]byte{bootstrapapi.BootstrapTokenExpirationKey: []byte(exp.Format(time.RFC3339))},
	})
	if err != nil {
		return time.Time{}, err
	}
	if _, err := c.CoreV1().Secrets(TokenNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("refreshing bootstrap token %s of instance %s: %w", id, instance, err)
	}
	return exp, nil
}
