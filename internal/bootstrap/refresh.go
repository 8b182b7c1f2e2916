package bootstrap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
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
// runs out. recorded is the expiration the instance recorded when the token
// was issued or last refreshed; RefreshToken returns the token's expiration
// now.
//
// The operator does not read kube-system's Secrets (it may not: see
// token.go), so the Secret is changed by a JSON patch (RFC 6902) whose
// test operations are the precondition: the Secret must be a bootstrap
// token, labelled as instance's, and still expire at recorded. A token
// that is gone, has run out, is not the instance's, or was changed by
// someone else is an error: its host needs a new one.
func RefreshToken(ctx context.Context, c kubernetes.Interface, instance, id string, recorded time.Time, ttl time.Duration) (time.Time, error) {
	now := time.Now()
	switch {
	case !recorded.After(now):
		return recorded, fmt.Errorf("bootstrap token %s of instance %s expired at %s", id, instance, recorded.UTC().Format(time.RFC3339))
	case recorded.After(now.Add(ttl * 5 / 6)):
		return recorded, nil
	}
	exp := now.Add(ttl).UTC().Truncate(time.Second)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	expPath := "/data/" + bootstrapapi.BootstrapTokenExpirationKey
	patch, err := json.Marshal([]map[string]string{
		{"op": "test", "path": "/type", "value": string(corev1.SecretTypeBootstrapToken)},
		{"op": "test", "path": "/metadata/labels/" + jsonPointerEscape(winnodev1.LabelInstance), "value": instance},
		{"op": "test", "path": expPath, "value": b64(recorded.UTC().Format(time.RFC3339))},
		{"op": "replace", "path": expPath, "value": b64(exp.Format(time.RFC3339))},
	})
	if err != nil {
		return time.Time{}, err
	}
	name := bootstraputil.BootstrapTokenSecretName(id)
	if _, err := c.CoreV1().Secrets(TokenNamespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("refreshing bootstrap token %s of instance %s (Secret %s/%s, expected a bootstrap token of that instance expiring at %s): %w",
			id, instance, TokenNamespace, name, recorded.UTC().Format(time.RFC3339), err)
	}
	return exp, nil
}

// jsonPointerEscape escapes a key for a JSON pointer (RFC 6901).
func jsonPointerEscape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
