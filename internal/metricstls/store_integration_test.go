package metricstls

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// storeFor is a Store of a new namespace as the operator builds it: reads
// through a cache of the namespace, writes to the API server. Its client's
// requests (not the cache's list and watch) are counted by verb.
func storeFor(t *testing.T) (*Store, *requests) {
	t.Helper()
	env := testenv.Get(t)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metricstls-"}}
	ns, err = kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(env.Config, cache.Options{DefaultNamespaces: map[string]cache.Config{ns.Name: {}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	counted := rest.CopyConfig(env.Config)
	reqs := &requests{}
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return reqs.count(rt) })
	cl, err := client.New(counted, client.Options{Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	live, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Store{Client: cl, Live: live, Namespace: ns.Name}, reqs
}

// requests counts the HTTP requests of a client by method and answer
// ("PUT 200", "PUT 409").
type requests struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *requests) count(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		res, err := rt.RoundTrip(req)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.n == nil {
			r.n = map[string]int{}
		}
		if err != nil {
			r.n[req.Method+" error"]++
		} else {
			r.n[fmt.Sprintf("%s %d", req.Method, res.StatusCode)]++
		}
		return res, err
	})
}

func (r *requests) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = nil
	return n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Against the real API server: the CA is made once and published; a
// node's certificate is kept while it serves and issued again when the
// node's address changes; a CA Secret that is not a CA is named, not
// replaced.
func TestStoreKeepsCAAndCertificates(t *testing.T) {
	s, _ := storeFor(t)
	ctx := context.Background()
	ca, err := s.CA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CA(ctx)
	if err != nil || !again.Cert.Equal(ca.Cert) {
		t.Fatalf("a second call made another CA (%v)", err)
	}
	cm, err := kubeOf(t).CoreV1().ConfigMaps(s.Namespace).Get(ctx, CAConfigMapName, metav1.GetOptions{})
	if err != nil || cm.Data[CAKey] != string(ca.CertPEM) {
		t.Fatalf("published CA: %v %v", cm, err)
	}
	ip := net.ParseIP("10.1.2.3")
	cert, key, why, err := s.Serving(ctx, "win-a", ip, t0)
	if err != nil || why != "none was issued yet" {
		t.Fatalf("first certificate: %q, %v", why, err)
	}
	cert2, key2, why, err := s.Serving(ctx, "win-a", ip, t0.Add(ServingValidity/2))
	if err != nil || why != "" || string(cert2) != string(cert) || string(key2) != string(key) {
		t.Errorf("a certificate that still serves was not kept: %q, %v", why, err)
	}
	cert3, _, why, err := s.Serving(ctx, "win-a", net.ParseIP("10.1.2.4"), t0.Add(ServingValidity/2))
	if err != nil || !strings.Contains(why, "10.1.2.4") || string(cert3) == string(cert) {
		t.Errorf("a moved node kept its certificate: %q, %v", why, err)
	}
	if _, _, _, err := s.Serving(ctx, "win-b", net.ParseIP("10.1.2.5"), t0); err != nil {
		t.Fatal(err)
	}
	sec, err := kubeOf(t).CoreV1().Secrets(s.Namespace).Get(ctx, ServingSecretName, metav1.GetOptions{})
	if err != nil || string(sec.Data["win-a.crt"]) != string(cert3) || len(sec.Data) != 4 {
		t.Errorf("the nodes' Secret: %v, %v", sec, err)
	}
	// A node gone: its pair goes, the others stay.
	if err := s.Prune(ctx, map[string]bool{"win-b": true}); err != nil {
		t.Fatal(err)
	}
	sec, _ = kubeOf(t).CoreV1().Secrets(s.Namespace).Get(ctx, ServingSecretName, metav1.GetOptions{})
	if _, ok := sec.Data["win-a.crt"]; ok || len(sec.Data) != 2 {
		t.Errorf("after pruning win-a: keys %v", len(sec.Data))
	}

	caSecret, _ := kubeOf(t).CoreV1().Secrets(s.Namespace).Get(ctx, CASecretName, metav1.GetOptions{})
	caSecret.Data[corev1.TLSCertKey] = cert3
	if _, err := kubeOf(t).CoreV1().Secrets(s.Namespace).Update(ctx, caSecret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once the cache has the broken Secret, the Store names it.
	testkit.Eventually(t, 30*time.Second, "the broken CA Secret to be named", func() (bool, string) {
		_, err := s.CA(ctx)
		return err != nil && strings.Contains(err.Error(), "Secret "+s.Namespace+"/windows-exporter-ca"), fmt.Sprint(err)
	})
}

func kubeOf(t *testing.T) kubernetes.Interface {
	t.Helper()
	kube, err := kubernetes.NewForConfig(testenv.Get(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// A pass over nodes whose certificates still serve costs the API server
// nothing: the CA, its ConfigMap and the nodes' Secret are read from the
// cache and nothing is written (at fleet scale, each Ready host's check
// read the CA Secret and the serving Secret, up to 1 MiB, from the API
// server). A renewal writes the Secret once, and the pass after it, even
// before the cache has the write, keeps the new certificate.
func TestStoreReadsTheCacheAndWritesOnlyRenewals(t *testing.T) {
	s, reqs := storeFor(t)
	ctx := context.Background()
	nodes := []string{"win-a", "win-b", "win-c"}
	ip := func(i int) net.IP { return net.IPv4(10, 9, 0, byte(i+1)) }
	first := map[string]string{}
	for i, n := range nodes {
		cert, _, why, err := s.Serving(ctx, n, ip(i), t0)
		if err != nil || why == "" {
			t.Fatalf("%s: first certificate: %q, %v", n, why, err)
		}
		first[n] = string(cert)
	}
	// Once the cache holds all three, passes read it only.
	testkit.Eventually(t, 30*time.Second, "the cache to hold every certificate", func() (bool, string) {
		var sec corev1.Secret
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: ServingSecretName}, &sec)
		return err == nil && len(sec.Data) == 2*len(nodes), fmt.Sprintf("%d keys, %v", len(sec.Data), err)
	})
	reqs.take()
	for pass := range 5 {
		for i, n := range nodes {
			cert, _, why, err := s.Serving(ctx, n, ip(i), t0.Add(time.Duration(pass)*time.Hour))
			if err != nil || why != "" || string(cert) != first[n] {
				t.Fatalf("%s, pass %d: %q, %v; want the certificate kept", n, pass, why, err)
			}
		}
	}
	if got := reqs.take(); len(got) != 0 {
		t.Errorf("passes that keep every certificate sent the API server %v; want no request", got)
	}
	// win-b moves: one write; the next pass keeps the new certificate.
	moved := net.IPv4(10, 9, 1, 2)
	renewed, _, why, err := s.Serving(ctx, "win-b", moved, t0)
	if err != nil || !strings.Contains(why, "10.9.1.2") {
		t.Fatalf("win-b moved: %q, %v", why, err)
	}
	again, _, why, err := s.Serving(ctx, "win-b", moved, t0)
	if err != nil || string(again) != string(renewed) {
		t.Errorf("the pass after a renewal issued again (%q, %v)", why, err)
	}
	// The pass after may try a write on the cache's older copy, which the
	// API server refuses (409) and the retry reads afresh: one write took.
	if got := reqs.take(); got["PUT 200"] != 1 {
		t.Errorf("a renewal sent %v; want one PUT of the Secret that took", got)
	}
}
