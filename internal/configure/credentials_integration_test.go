package configure

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/testenv"
)

// An instance that stays un-Ready does not keep its join ServiceAccount
// beyond its token's lifetime: once the credential has expired, the next
// pass deletes the ServiceAccount (which revokes every token of it) and
// clears the status, so the next attempt makes a new one. A credential
// that has not expired yet is kept.
func TestExpiredJoinServiceAccountOfAnUnReadyInstanceIsDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := rolloutClient(t)
	kube := kubernetes.NewForConfigOrDie(testenv.Get(t).Config)
	const ns = "winnode-expiry-test"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := bootstrap.EnsureRBAC(ctx, kube); err != nil {
		t.Fatal(err)
	}
	var events []string
	conf := &Configurer{Kube: kube, JoinNamespace: ns, Log: logr.Discard(),
		Event:   func(_ *winnodev1.WindowsInstance, _, reason, _ string) { events = append(events, reason) },
		Persist: func(ctx context.Context, inst *winnodev1.WindowsInstance) error { return c.Status().Update(ctx, inst) }}

	for _, tc := range []struct {
		name    string
		expires time.Time
		revoked bool
	}{
		{"join-expired", time.Now().Add(-time.Minute), true},
		{"join-valid", time.Now().Add(time.Hour), false},
	} {
		inst := rolloutInstance(t, c, "expiry", tc.name, winnodev1.PhaseFailed, false)
		tok, err := bootstrap.CreateServiceAccountToken(ctx, kube, ns, inst.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		inst.Status.JoinServiceAccount = tok.Name
		inst.Status.JoinCredentialExpires = &metav1.Time{Time: tc.expires}
		if err := c.Status().Update(ctx, inst); err != nil {
			t.Fatal(err)
		}
		events = nil
		if err := conf.expireJoinCredentials(ctx, inst); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err = kube.CoreV1().ServiceAccounts(ns).Get(ctx, tok.Name, metav1.GetOptions{})
		var got winnodev1.WindowsInstance
		if err := c.Get(ctx, client.ObjectKeyFromObject(inst), &got); err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.revoked && (!apierrors.IsNotFound(err) || got.Status.JoinServiceAccount != "" || got.Status.JoinCredentialExpires != nil || len(events) != 1 || events[0] != "JoinCredentialsExpired"):
			t.Errorf("%s: ServiceAccount %v, status %q/%v, events %v; want it deleted, the status cleared and JoinCredentialsExpired",
				tc.name, err, got.Status.JoinServiceAccount, got.Status.JoinCredentialExpires, events)
		case !tc.revoked && (err != nil || got.Status.JoinServiceAccount != tok.Name || len(events) != 0):
			t.Errorf("%s: ServiceAccount %v, status %q, events %v; want an unexpired credential kept", tc.name, err, got.Status.JoinServiceAccount, events)
		}
	}
}
