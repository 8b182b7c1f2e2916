package sshkey

import (
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/fixture"
)

func TestParsePrivateKey(t *testing.T) {
	k := fixture.PrivateKeys()
	encrypted, err := ssh.MarshalPrivateKeyWithPassphrase(k["ed25519"], "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(k["ed25519"].(ed25519.PrivateKey).Public())
	if err != nil {
		t.Fatal(err)
	}
	good := map[string][]byte{
		"RSA 2048 PKCS#1":  fixture.PEMPKCS1(k["rsa2048"].(*rsa.PrivateKey)),
		"RSA 2048 PKCS#8":  fixture.PEMPKCS8(t, k["rsa2048"]),
		"RSA 2048 OpenSSH": fixture.PEMOpenSSH(t, k["rsa2048"]),
		"ed25519 PKCS#8":   fixture.PEMPKCS8(t, k["ed25519"]),
		"ed25519 OpenSSH":  fixture.PEMOpenSSH(t, k["ed25519"]),
	}
	for name, data := range good {
		s, err := ParsePrivateKey(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fp := KeyFingerprint(s); !strings.HasPrefix(fp, "SHA256:") {
			t.Errorf("%s: fingerprint %q", name, fp)
		}
	}
	if a, b := mustParse(t, good["RSA 2048 PKCS#1"]), mustParse(t, good["RSA 2048 OpenSSH"]); KeyFingerprint(a) != KeyFingerprint(b) {
		t.Error("the same RSA key in two formats has two fingerprints")
	}

	bad := []struct {
		name, data, wantInMessage string
	}{
		{"empty", "", "is empty"},
		{"garbage", "not a key", "not a PEM private key"},
		{"RSA 1024", string(fixture.PEMPKCS1(k["rsa1024"].(*rsa.PrivateKey))), "1024-bit RSA key, too weak"},
		{"RSA 1024 OpenSSH", string(fixture.PEMOpenSSH(t, k["rsa1024"])), "too weak"},
		{"ECDSA", string(fixture.PEMPKCS8(t, k["ecdsa"])), "ecdsa-sha2-nistp256 key"},
		{"passphrase", string(pem.EncodeToMemory(encrypted)), "passphrase"},
		{"public key", string(ssh.MarshalAuthorizedKey(sshPub)), "not a PEM private key"},
		{"truncated", string(good["RSA 2048 PKCS#1"][:200]), "not a PEM private key"},
		{"certificate block", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a PEM private key"},
	}
	for _, tc := range bad {
		_, err := ParsePrivateKey([]byte(tc.data))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Reason != winnodev1.ReasonInvalidPrivateKey {
			t.Errorf("%s: error %v, want a KeyError with reason %s", tc.name, err, winnodev1.ReasonInvalidPrivateKey)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantInMessage) || !strings.Contains(err.Error(), PrivateKeySecret) {
			t.Errorf("%s: message %q lacks %q or the Secret's name", tc.name, err, tc.wantInMessage)
		}
		if tc.data != "" && len(tc.data) > 40 && strings.Contains(err.Error(), tc.data[30:40]) {
			t.Errorf("%s: message quotes the key: %q", tc.name, err)
		}
	}
}

// FuzzParsePrivateKey: the key comes from a Secret an administrator writes.
// Whatever it holds, the parser returns a usable, strong key or a KeyError.
func FuzzParsePrivateKey(f *testing.F) {
	k := fixture.PrivateKeys()
	f.Add(fixture.PEMOpenSSH(f, k["ed25519"]))
	f.Add(fixture.PEMPKCS1(k["rsa1024"].(*rsa.PrivateKey)))
	f.Add(fixture.PEMPKCS8(f, k["ecdsa"]))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParsePrivateKey(data)
		if err != nil {
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("error is not a KeyError: %v", err)
			}
			return
		}
		switch s.PublicKey().Type() {
		case ssh.KeyAlgoED25519, ssh.KeyAlgoRSA:
		default:
			t.Fatalf("accepted a %s key", s.PublicKey().Type())
		}
	})
}

func mustParse(t *testing.T, data []byte) ssh.Signer {
	t.Helper()
	s, err := ParsePrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The cache parses a key once, and again only when its bytes change.
func TestSignerCacheParsesOnlyAChangedKey(t *testing.T) {
	one, two := fixture.NewKey(t), fixture.NewKey(t)
	var sc SignerCache
	a, err := sc.parse(one.PEM)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sc.parse(append([]byte(nil), one.PEM...))
	if err != nil {
		t.Fatal(err)
	}
	if again != a {
		t.Error("the same key bytes were parsed again")
	}
	b, err := sc.parse(two.PEM)
	if err != nil {
		t.Fatal(err)
	}
	if b == a || KeyFingerprint(b) != KeyFingerprint(two.Signer) {
		t.Errorf("a rotated key gave signer %s, want %s", KeyFingerprint(b), KeyFingerprint(two.Signer))
	}
	if _, err := sc.parse([]byte("not a key")); err == nil {
		t.Error("a bad key parsed")
	}
	if c, _ := sc.parse(two.PEM); c != b {
		t.Error("a bad key in between made the last good one parse again")
	}
}
