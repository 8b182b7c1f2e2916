package metricstls

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceCA copies the service CA's Secret; with none yet, its error names
// the Secret and the Service; once it has read a good pair, it keeps giving
// it while the Secret is deleted or garbled (being written again), so that
// a Ready node's check does not fail for it, and takes a new pair as soon
// as one is there.
func TestServiceCAKeepsTheLastGoodPair(t *testing.T) {
	ctx := context.Background()
	store, _ := storeFor(t)
	live := store.Live.(client.Client)
	s := &ServiceCA{Client: live, Namespace: store.Namespace, Service: "windows-exporter"}
	if _, _, _, err := s.Serving(ctx, "win-a", nil, time.Now()); err == nil || !strings.Contains(err.Error(), "has not written Secret "+store.Namespace+"/"+ServiceCASecretName+" yet for Service windows-exporter") {
		t.Fatalf("no Secret yet: %v", err)
	}
	ca, _, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	pair := func() (cert, key []byte) {
		cert, key, err := ca.Issue(ServiceServerName("windows-exporter", store.Namespace), []byte{10, 0, 0, 5}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return cert, key
	}
	write := func(cert, key []byte) {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ServiceCASecretName, Namespace: store.Namespace}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}
		if err := live.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if cert != nil {
			if err := live.Create(ctx, sec); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(what string, want []byte) {
		t.Helper()
		got, _, why, err := s.Serving(ctx, "win-a", nil, time.Now())
		if err != nil || !bytes.Equal(got, want) || why != "" {
			t.Errorf("%s: %v, why %q, the expected certificate: %v", what, err, why, bytes.Equal(got, want))
		}
	}
	first, key := pair()
	write(first, key)
	check("the Secret written", first)
	write(nil, nil)
	check("the Secret deleted", first)
	write([]byte("garbled"), key)
	check("the Secret garbled", first)
	second, key2 := pair()
	write(second, key2)
	check("a new certificate", second)
}
