package metricstls

import (
	"context"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func storeFor(t *testing.T) Store {
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
	return Store{Kube: kube, Namespace: ns.Name}
}

// Against the real API server: the CA is made once and published; a
// node's certificate is kept while it serves and issued again when the
// node's address changes; a CA Secret that is not a CA is named, not
// replaced.
func TestStoreKeepsCAAndCertificates(t *testing.T) {
	s := storeFor(t)
	ctx := context.Background()
	ca, err := s.CA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CA(ctx)
	if err != nil || !again.Cert.Equal(ca.Cert) {
		t.Fatalf("a second call made another CA (%v)", err)
	}
	cm, err := s.Kube.CoreV1().ConfigMaps(s.Namespace).Get(ctx, CAConfigMapName, metav1.GetOptions{})
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
	sec, err := s.Kube.CoreV1().Secrets(s.Namespace).Get(ctx, ServingSecretName, metav1.GetOptions{})
	if err != nil || string(sec.Data["win-a.crt"]) != string(cert3) || len(sec.Data) != 4 {
		t.Errorf("the nodes' Secret: %v, %v", sec, err)
	}
	// A node gone: its pair goes, the others stay.
	if err := s.Prune(ctx, map[string]bool{"win-b": true}); err != nil {
		t.Fatal(err)
	}
	sec, _ = s.Kube.CoreV1().Secrets(s.Namespace).Get(ctx, ServingSecretName, metav1.GetOptions{})
	if _, ok := sec.Data["win-a.crt"]; ok || len(sec.Data) != 2 {
		t.Errorf("after pruning win-a: keys %v", len(sec.Data))
	}

	caSecret, _ := s.Kube.CoreV1().Secrets(s.Namespace).Get(ctx, CASecretName, metav1.GetOptions{})
	caSecret.Data[corev1.TLSCertKey] = cert3
	if _, err := s.Kube.CoreV1().Secrets(s.Namespace).Update(ctx, caSecret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CA(ctx); err == nil || !strings.Contains(err.Error(), "Secret "+s.Namespace+"/windows-exporter-ca") {
		t.Errorf("a broken CA Secret: %v", err)
	}
}
