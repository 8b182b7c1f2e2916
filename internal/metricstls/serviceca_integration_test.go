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
// as one is there. It parses the Secret once per version: another host's
// pass does not parse it again, an updated Secret is parsed again.
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
	// checks is how many times the Secret was parsed and checked.
	checks := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.checks
	}
	first, key := pair()
	write(first, key)
	check("the Secret written", first)
	// Another host, the same Secret: not parsed again.
	before := checks()
	if _, _, _, err := s.Serving(ctx, "win-b", []byte{10, 0, 0, 6}, time.Now()); err != nil || checks() != before {
		t.Errorf("the same Secret for another host: %v; checked %d times, want %d", err, checks(), before)
	}
	write(nil, nil)
	check("the Secret deleted", first)
	write([]byte("garbled"), key)
	check("the Secret garbled", first)
	second, key2 := pair()
	write(second, key2)
	check("a new certificate", second)
	// The Secret changed in place (a new resourceVersion): read again.
	third, key3 := pair()
	sec := &corev1.Secret{}
	if err := live.Get(ctx, client.ObjectKey{Namespace: store.Namespace, Name: ServiceCASecretName}, sec); err != nil {
		t.Fatal(err)
	}
	sec.Data = map[string][]byte{corev1.TLSCertKey: third, corev1.TLSPrivateKeyKey: key3}
	if err := live.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	before = checks()
	check("the Secret updated", third)
	if checks() != before+1 {
		t.Errorf("the updated Secret was checked %d times, want once", checks()-before)
	}
}
