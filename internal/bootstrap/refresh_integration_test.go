package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// As Cluster API's kubeadm bootstrap provider does: a token with more than
// five sixths of its TTL left is left alone; one with less gets now + TTL;
// the token of another instance, one whose expiration is not the one
// recorded, or one that is gone, is not refreshed.
func TestRefreshTokenExtendsOnlyWhenDue(t *testing.T) {
	ctx := context.Background()
	_, admin := adminClient(t)
	tok, err := CreateToken(ctx, admin, "wi-refresh", ClusterAPITokenTTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RevokeInstanceToken(context.Background(), admin, tok.Instance, tok.ID) })
	exp, err := RefreshToken(ctx, admin, tok.Instance, tok.ID, tok.Expiration, ClusterAPITokenTTL)
	if err != nil || !exp.Equal(tok.Expiration) {
		t.Errorf("a fresh token: expiration %v (%v), want it left at %v", exp, err, tok.Expiration)
	}
	// A third of its life later (a longer TTL asked for, the same token):
	// due, extended to now + TTL.
	ttl := 3 * ClusterAPITokenTTL
	if _, err := RefreshToken(ctx, admin, "someone-else", tok.ID, tok.Expiration, ttl); err == nil || !strings.Contains(err.Error(), "expected a bootstrap token of that instance") {
		t.Errorf("another instance's token refreshed: %v", err)
	}
	exp, err = RefreshToken(ctx, admin, tok.Instance, tok.ID, tok.Expiration, ttl)
	if err != nil || time.Until(exp) < ttl-time.Minute {
		t.Errorf("a token due for a refresh: expiration %v (%v), want about now + %v", exp, err, ttl)
	}
	s, err := admin.CoreV1().Secrets(TokenNamespace).Get(ctx, tok.SecretName(), metav1.GetOptions{})
	if got := tokenFromSecret(s); err != nil || got == nil || !got.Expiration.Equal(exp) {
		t.Errorf("the Secret's expiration: %+v, %v; want %v", got, err, exp)
	}
	if _, err := RefreshToken(ctx, admin, tok.Instance, tok.ID, tok.Expiration, ttl); err == nil {
		t.Error("a token refreshed from an expiration it no longer has")
	}
	if err := admin.CoreV1().Secrets(TokenNamespace).Delete(ctx, tok.SecretName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Due again (a longer TTL still), but gone.
	if _, err := RefreshToken(ctx, admin, tok.Instance, tok.ID, exp, 3*ttl); err == nil {
		t.Error("a revoked token refreshed")
	}
}
