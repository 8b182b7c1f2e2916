package controller

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/sshkey"
)

// Test keys (as internal/sshkey's tests make them) are generated once per test binary (RSA generation is slow).
var testKeys = sync.OnceValue(func() map[string]any {
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		panic(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return map[string]any{"rsa2048": rsa2048, "rsa1024": rsa1024, "ed25519": ed, "ecdsa": ec}
})

func pemPKCS1(t testing.TB, k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

func pemPKCS8(t testing.TB, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func pemOpenSSH(t testing.TB, k any) []byte {
	t.Helper()
	b, err := ssh.MarshalPrivateKey(k, "a comment")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(b)
}

// testKeyPEM is an ed25519 key in OpenSSH form, for tests of other files.
func testKeyPEM(t testing.TB) []byte { return pemOpenSSH(t, testKeys()["ed25519"]) }

func mustParse(t *testing.T, data []byte) ssh.Signer {
	t.Helper()
	s, err := sshkey.ParsePrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
