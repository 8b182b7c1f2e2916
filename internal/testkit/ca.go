package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

// SelfSignedCA is the PEM of a new self-signed CA certificate
// ("kubernetes", client-go's NewSelfSignedCACert: valid from now for ten
// years), of no cluster: for kubeconfigs and join configs that need a CA
// but reach no API server with it. Golden files need fixed bytes and make
// their own from a fixed key.
func SelfSignedCA(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "kubernetes"}, key)
	if err != nil {
		t.Fatal(err)
	}
	data, err := certutil.EncodeCertificates(ca)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
