package testenv

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/winnode/winnode/internal/testkit"
)

// The simulated service-ca controller, against the real API server, does
// what OpenShift's does where winnode relies on it: an annotated Service
// gets its Secret (a certificate for its two names, chaining to the CA,
// the CA after it, owned by the Service), a garbled or deleted one is
// written again,
// a Secret of another Service is left alone with an error on the Service,
// an annotated ConfigMap gets the bundle as its only data, and a rotation
// replaces both with the new CA's.
func TestSimulatedServiceCA(t *testing.T) {
	env := Get(t)
	c := admin(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := fmt.Sprintf("serviceca-%d", os.Getpid()%100000)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	var log syncWriter
	sca, err := startServiceCA(ctx, env.Config, &log)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := sca.bundle()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	service := func(name string) *corev1.Service {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{annotationServingCertName: "serving"}},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 9182}}}}
		svc, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	svc := service("exporter")
	// servingCert waits for a Secret whose certificate verifies for the
	// Service's name and differs from not.
	servingCert := func(not []byte) *corev1.Secret {
		var sec *corev1.Secret
		testkit.Eventually(t, 30*time.Second, "the Secret serving", func() (bool, string) {
			if sec, err = c.CoreV1().Secrets(ns).Get(ctx, "serving", metav1.GetOptions{}); err != nil {
				return false, err.Error() + "\n" + log.String()
			}
			certs, err := certutil.ParseCertsPEM(sec.Data[corev1.TLSCertKey])
			if err != nil || string(sec.Data[corev1.TLSCertKey]) == string(not) {
				return false, fmt.Sprint("not (re)issued yet: ", err)
			}
			_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: "exporter." + ns + ".svc"})
			return err == nil, fmt.Sprint(err)
		})
		return sec
	}
	sec := servingCert(nil)
	certs, _ := certutil.ParseCertsPEM(sec.Data[corev1.TLSCertKey])
	if sec.Type != corev1.SecretTypeTLS || len(certs) != 2 || !slices.Contains(certs[0].DNSNames, "exporter."+ns+".svc.cluster.local") ||
		len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != svc.UID || sec.Annotations[annotationOriginUID] != string(svc.UID) {
		t.Errorf("Secret serving: type %s, %d certificates, names %v, owners %v, annotations %v", sec.Type, len(certs), certs[0].DNSNames, sec.OwnerReferences, sec.Annotations)
	}

	garbled := []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	sec.Data[corev1.TLSCertKey] = garbled
	if _, err := c.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec = servingCert(garbled)
	if err := c.CoreV1().Secrets(ns).Delete(ctx, sec.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	servingCert(sec.Data[corev1.TLSCertKey])

	other := service("other")
	testkit.Eventually(t, 30*time.Second, "an error on the Service whose Secret name is taken", func() (bool, string) {
		got, err := c.CoreV1().Services(ns).Get(ctx, other.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(got.Annotations[annotationGenerationError], "does not have corresponding service UID"), fmt.Sprint(got.Annotations)
	})

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: ns, Annotations: map[string]string{annotationInjectCABundle: "true"}},
		Data: map[string]string{"ca.crt": "left over"}}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the bundle injected", func() (bool, string) {
		got, err := c.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(got.Data) == 1 && got.Data[serviceCABundleKey] == string(caPEM), fmt.Sprint(got.Data)
	})

	// A rotation (the manual one): the bundle is the new CA alone, and the
	// Secret a certificate of the new CA, written by the time rotate returns.
	before, err := c.CoreV1().Secrets(ns).Get(ctx, "serving", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := sca.rotate(ctx)
	if err != nil || bytes.Equal(rotated, caPEM) {
		t.Fatalf("rotate: %v; a new CA: %v", err, !bytes.Equal(rotated, caPEM))
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(rotated)
	servingCert(before.Data[corev1.TLSCertKey])
	if got, err := c.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{}); err != nil || len(got.Data) != 1 || got.Data[serviceCABundleKey] != string(rotated) {
		t.Errorf("ConfigMap %s after the rotation (%v): %v, want the new CA alone", cm.Name, err, got.Data)
	}
	if !strings.Contains(log.String(), "simulated") {
		t.Errorf("the controller's log does not say simulated:\n%s", log.String())
	}
}
