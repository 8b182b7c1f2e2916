package configure

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// windows_exporter's serving certificate names the instance's node name,
// fixed once before its first credential (issue 25), not the hostname the
// host reports on this pass: the kubelet registered under the fixed name,
// and scrapers verify the certificate against that Node. An instance with
// no node name yet gets an error naming it, not a certificate for "".
func TestMetricsCertificateNamesTheFixedNodeName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := testenv.Get(t)
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "winnode-metrics-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	direct, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conf := &Configurer{Kube: kube, Log: logr.Discard(), Metrics: &metricstls.Store{Client: direct, Live: direct, Namespace: ns.Name},
		Event: func(*winnodev1.WindowsInstance, string, string, string) {}}
	info := &plan.Info{Hostname: "WIN-RENAMED", IPv4: []string{"192.0.2.7"}, DefaultIPv4: "192.0.2.7"}

	inst := builder.Instance("fixed").Host("192.0.2.7", "Administrator").Node("win-fixed", "").NameFixed(time.Now()).Build()
	facts, _, err := conf.metricsFacts(ctx, inst, info)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(facts.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cert.DNSNames, []string{"win-fixed"}) || cert.Subject.CommonName != "win-fixed" {
		t.Errorf("the certificate names %v (CN %s); want the fixed node name win-fixed, not the reported hostname", cert.DNSNames, cert.Subject.CommonName)
	}

	unnamed := builder.Instance("unnamed").Host("192.0.2.7", "Administrator").Build()
	if _, _, err := conf.metricsFacts(ctx, unnamed, info); err == nil || !strings.Contains(err.Error(), "WindowsInstance unnamed has no node name") {
		t.Errorf("an instance without a node name: %v", err)
	}
}
