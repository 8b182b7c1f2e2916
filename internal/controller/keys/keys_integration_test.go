package keys

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testkit"
)

func TestMain(m *testing.M) { controllertest.Main(m) }

func mustParse(t *testing.T, data []byte) ssh.Signer {
	t.Helper()
	s, err := sshkey.ParsePrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func userData(ctx context.Context, w *controllertest.World) (*corev1.Secret, error) {
	var ud corev1.Secret
	err := w.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: UserDataSecret}, &ud)
	return &ud, err
}

// waitUserDataFor waits until the user data Secret holds the user data of pub.
func waitUserDataFor(t *testing.T, w *controllertest.World, pub ssh.PublicKey) {
	t.Helper()
	want, err := bootstrap.UserData(pub)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "user data rendered for key "+ssh.FingerprintSHA256(pub), func() (bool, string) {
		ud, err := userData(context.Background(), w)
		if err != nil {
			return false, err.Error()
		}
		return string(ud.Data[UserDataKey]) == string(want) &&
			ud.Annotations[winnodev1.AnnotationKeyFingerprint] == ssh.FingerprintSHA256(pub), "user data for key " + ud.Annotations[winnodev1.AnnotationKeyFingerprint]
	})
}

func TestKeysReconcilerRendersRotatesAndRejects(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	w.StartManager(t, func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Namespace: w.Namespace}).SetupWithManager(mgr)
	})

	// No key yet: sshkey.LoadSigner says so, with reason NoPrivateKey.
	_, err := sshkey.LoadSigner(ctx, w.Client, w.Namespace)
	var ke *sshkey.KeyError
	if !errors.As(err, &ke) || ke.Reason != winnodev1.ReasonNoPrivateKey || !strings.Contains(err.Error(), "kubectl -n "+w.Namespace+" create secret generic") {
		t.Fatalf("sshkey.LoadSigner without a Secret: %v", err)
	}

	// A key: the user data appears, for its public key.
	keySecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: sshkey.PrivateKeySecret},
		Data:       map[string][]byte{sshkey.PrivateKeyKey: fixture.PEMOpenSSH(t, fixture.PrivateKeys()["ed25519"])},
	}
	if err := w.Client.Create(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	ed := mustParse(t, keySecret.Data[sshkey.PrivateKeyKey])
	waitUserDataFor(t, w, ed.PublicKey())
	signer, err := sshkey.LoadSigner(ctx, w.Client, w.Namespace)
	if err != nil || sshkey.KeyFingerprint(signer) != sshkey.KeyFingerprint(ed) {
		t.Fatalf("sshkey.LoadSigner = %v, %v; want the ed25519 key", signer, err)
	}
	ud, err := userData(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(ud.OwnerReferences) != 1 || ud.OwnerReferences[0].Name != sshkey.PrivateKeySecret {
		t.Errorf("user data owner references %v, want the key Secret", ud.OwnerReferences)
	}

	// Rotation: a new key, new user data and a new fingerprint.
	keySecret.Data[sshkey.PrivateKeyKey] = fixture.PEMPKCS1(fixture.PrivateKeys()["rsa2048"].(*rsa.PrivateKey))
	if err := w.Client.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	rsaSigner := mustParse(t, keySecret.Data[sshkey.PrivateKeyKey])
	waitUserDataFor(t, w, rsaSigner.PublicKey())

	// Each rendering is reported with its own key's fingerprint.
	testkit.Eventually(t, 30*time.Second, "UserDataUpdated events for both keys", func() (bool, string) {
		evs, err := w.EventsFor(ctx, w.Namespace, sshkey.PrivateKeySecret, EventReasonUserDataUpdated)
		var ed25519Seen, rsaSeen bool
		for _, e := range evs {
			ed25519Seen = ed25519Seen || strings.Contains(e.Note, sshkey.KeyFingerprint(ed))
			rsaSeen = rsaSeen || strings.Contains(e.Note, sshkey.KeyFingerprint(rsaSigner))
		}
		return err == nil && ed25519Seen && rsaSeen, fmt.Sprintf("ed25519 key's seen: %t, RSA key's seen: %t (%v)", ed25519Seen, rsaSeen, err)
	})

	// The user data deleted by mistake: rendered again.
	if err := w.Client.Delete(ctx, ud); err != nil {
		t.Fatal(err)
	}
	waitUserDataFor(t, w, rsaSigner.PublicKey())

	// A weak key: one Warning event, the user data left as it was.
	keySecret.Data[sshkey.PrivateKeyKey] = fixture.PEMPKCS1(fixture.PrivateKeys()["rsa1024"].(*rsa.PrivateKey))
	if err := w.Client.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "Warning event InvalidPrivateKey on the key Secret", func() (bool, string) {
		evs, err := w.EventsFor(ctx, w.Namespace, sshkey.PrivateKeySecret, EventReasonInvalidPrivateKey)
		if err != nil || len(evs) == 0 {
			return false, fmt.Sprintf("no event (%v)", err)
		}
		if evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Note, "too weak") {
			t.Errorf("event %s %q", evs[0].Type, evs[0].Note)
		}
		if strings.Contains(evs[0].Note, "PRIVATE KEY") {
			t.Errorf("event quotes the key: %q", evs[0].Note)
		}
		return true, evs[0].Note
	})
	_, err = sshkey.LoadSigner(ctx, w.Client, w.Namespace)
	if !errors.As(err, &ke) || ke.Reason != winnodev1.ReasonInvalidPrivateKey {
		t.Errorf("sshkey.LoadSigner with a weak key: %v, want reason %s", err, winnodev1.ReasonInvalidPrivateKey)
	}
	ud, err = userData(ctx, w)
	if err != nil || ud.Annotations[winnodev1.AnnotationKeyFingerprint] != sshkey.KeyFingerprint(rsaSigner) {
		t.Errorf("a weak key changed the user data: %v %v", ud.Annotations, err)
	}

	// A Secret without the key: NoPrivateKey.
	delete(keySecret.Data, sshkey.PrivateKeyKey)
	keySecret.Data["id_rsa"] = []byte("x")
	if err := w.Client.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	_, err = sshkey.LoadSigner(ctx, w.Client, w.Namespace)
	if !errors.As(err, &ke) || ke.Reason != winnodev1.ReasonNoPrivateKey || !strings.Contains(err.Error(), "has no key "+sshkey.PrivateKeyKey) {
		t.Errorf("sshkey.LoadSigner without the key in the Secret: %v", err)
	}
}

// TestKeysUnderGeneratedRBAC runs the keys controller as a user that holds
// only config/rbac/role.yaml: the permissions the markers declare are
// enough for it to create the user data Secret, owned by the key Secret
// (which takes the right to update the key Secret's finalizers).
func TestKeysUnderGeneratedRBAC(t *testing.T) {
	w := controllertest.NewWorld(t)
	cfg := w.OperatorConfig(t)
	w.StartManagerAs(t, cfg, func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Namespace: w.Namespace}).SetupWithManager(mgr)
	})
	if err := w.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: sshkey.PrivateKeySecret},
		Data:       map[string][]byte{sshkey.PrivateKeyKey: controllertest.KeyPEM(t)},
	}); err != nil {
		t.Fatal(err)
	}
	waitUserDataFor(t, w, mustParse(t, controllertest.KeyPEM(t)).PublicKey())
}
