package controller

import (
	"context"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/sshkey"
)

// eventsFor lists the events.k8s.io Events about the named object with reason.
func (w *world) eventsFor(ctx context.Context, namespace, name, reason string) ([]eventsv1.Event, error) {
	list, err := w.kube.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

func (w *world) userData(ctx context.Context) (*corev1.Secret, error) {
	var ud corev1.Secret
	err := w.client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: UserDataSecret}, &ud)
	return &ud, err
}

// userDataFor waits until the user data Secret holds the user data of pub.
func (w *world) waitUserDataFor(t *testing.T, pub ssh.PublicKey) {
	t.Helper()
	want, err := bootstrap.UserData(pub)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "user data rendered for key "+ssh.FingerprintSHA256(pub), func(ctx context.Context) (bool, error) {
		ud, err := w.userData(ctx)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return string(ud.Data[UserDataKey]) == string(want) &&
			ud.Annotations[winnodev1.AnnotationKeyFingerprint] == ssh.FingerprintSHA256(pub), nil
	})
}

func TestKeysReconcilerRendersRotatesAndRejects(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.startManager(t, func(mgr ctrl.Manager) error {
		return (&KeysReconciler{Client: mgr.GetClient(), Namespace: w.namespace}).SetupWithManager(mgr)
	})

	// No key yet: sshkey.LoadSigner says so, with reason NoPrivateKey.
	_, err := sshkey.LoadSigner(ctx, w.client, w.namespace)
	var ke *sshkey.KeyError
	if !errors.As(err, &ke) || ke.Reason != winnodev1.ReasonNoPrivateKey || !strings.Contains(err.Error(), "kubectl -n "+w.namespace+" create secret generic") {
		t.Fatalf("sshkey.LoadSigner without a Secret: %v", err)
	}

	// A key: the user data appears, for its public key.
	keySecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: sshkey.PrivateKeySecret},
		Data:       map[string][]byte{sshkey.PrivateKeyKey: fixture.PEMOpenSSH(t, fixture.PrivateKeys()["ed25519"])},
	}
	if err := w.client.Create(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	ed := mustParse(t, keySecret.Data[sshkey.PrivateKeyKey])
	w.waitUserDataFor(t, ed.PublicKey())
	signer, err := sshkey.LoadSigner(ctx, w.client, w.namespace)
	if err != nil || sshkey.KeyFingerprint(signer) != sshkey.KeyFingerprint(ed) {
		t.Fatalf("sshkey.LoadSigner = %v, %v; want the ed25519 key", signer, err)
	}
	ud, err := w.userData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ud.OwnerReferences) != 1 || ud.OwnerReferences[0].Name != sshkey.PrivateKeySecret {
		t.Errorf("user data owner references %v, want the key Secret", ud.OwnerReferences)
	}

	// Rotation: a new key, new user data and a new fingerprint.
	keySecret.Data[sshkey.PrivateKeyKey] = fixture.PEMPKCS1(fixture.PrivateKeys()["rsa2048"].(*rsa.PrivateKey))
	if err := w.client.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	rsaSigner := mustParse(t, keySecret.Data[sshkey.PrivateKeyKey])
	w.waitUserDataFor(t, rsaSigner.PublicKey())

	// Each rendering is reported with its own key's fingerprint.
	eventually(t, 30*time.Second, "UserDataUpdated events for both keys", func(ctx context.Context) (bool, error) {
		evs, err := w.eventsFor(ctx, w.namespace, sshkey.PrivateKeySecret, EventReasonUserDataUpdated)
		var ed25519Seen, rsaSeen bool
		for _, e := range evs {
			ed25519Seen = ed25519Seen || strings.Contains(e.Note, sshkey.KeyFingerprint(ed))
			rsaSeen = rsaSeen || strings.Contains(e.Note, sshkey.KeyFingerprint(rsaSigner))
		}
		return ed25519Seen && rsaSeen, err
	})

	// The user data deleted by mistake: rendered again.
	if err := w.client.Delete(ctx, ud); err != nil {
		t.Fatal(err)
	}
	w.waitUserDataFor(t, rsaSigner.PublicKey())

	// A weak key: one Warning event, the user data left as it was.
	keySecret.Data[sshkey.PrivateKeyKey] = fixture.PEMPKCS1(fixture.PrivateKeys()["rsa1024"].(*rsa.PrivateKey))
	if err := w.client.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Warning event InvalidPrivateKey on the key Secret", func(ctx context.Context) (bool, error) {
		evs, err := w.eventsFor(ctx, w.namespace, sshkey.PrivateKeySecret, EventReasonInvalidPrivateKey)
		if err != nil || len(evs) == 0 {
			return false, err
		}
		if evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Note, "too weak") {
			t.Errorf("event %s %q", evs[0].Type, evs[0].Note)
		}
		if strings.Contains(evs[0].Note, "PRIVATE KEY") {
			t.Errorf("event quotes the key: %q", evs[0].Note)
		}
		return true, nil
	})
	_, err = sshkey.LoadSigner(ctx, w.client, w.namespace)
	if !errors.As(err, &ke) || ke.Reason != winnodev1.ReasonInvalidPrivateKey {
		t.Errorf("sshkey.LoadSigner with a weak key: %v, want reason %s", err, winnodev1.ReasonInvalidPrivateKey)
	}
	ud, err = w.userData(ctx)
	if err != nil || ud.Annotations[winnodev1.AnnotationKeyFingerprint] != sshkey.KeyFingerprint(rsaSigner) {
		t.Errorf("a weak key changed the user data: %v %v", ud.Annotations, err)
	}

	// A Secret without the key: NoPrivateKey.
	delete(keySecret.Data, sshkey.PrivateKeyKey)
	keySecret.Data["id_rsa"] = []byte("x")
	if err := w.client.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	_, err = sshkey.LoadSigner(ctx, w.client, w.namespace)
	if !errors.As(err, &ke) || ke.Reason != winnodev1.ReasonNoPrivateKey || !strings.Contains(err.Error(), "has no key "+sshkey.PrivateKeyKey) {
		t.Errorf("sshkey.LoadSigner without the key in the Secret: %v", err)
	}
}
