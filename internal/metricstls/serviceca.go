package metricstls

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// On OpenShift the exporter's TLS comes from the platform's service CA, as
// the Windows Machine Config Operator's does: the service-ca controller
// (github.com/openshift/service-ca-operator) writes a Secret of type
// kubernetes.io/tls, named by an annotation of the Service, with a serving
// certificate for <service>.<namespace>.svc (and .svc.cluster.local) signed
// by the service CA, and renews it when the service CA rotates; it writes
// the CA bundle into every ConfigMap annotated to ask for it, under
// ServiceCAKey. Every node serves that one certificate, and scrapers
// verify it with the bundle and the Service's name as server name.
const (
	// AnnotationServingCertSecret on a Service names the Secret the
	// service-ca controller writes.
	AnnotationServingCertSecret = "service.beta.openshift.io/serving-cert-secret-name"
	// AnnotationInjectCABundle ("true") on a ConfigMap asks the service-ca
	// controller to write the service CA bundle into it.
	AnnotationInjectCABundle = "service.beta.openshift.io/inject-cabundle"
	// ServiceCAKey is the ConfigMap key the bundle is written under.
	ServiceCAKey = "service-ca.crt"
	// ServiceCASecretName is the Secret the Service windows-exporter
	// names: the service CA's certificate for it.
	ServiceCASecretName = "windows-exporter-serving-cert"
)

// ServiceServerName is the name the service CA's certificate carries for
// Service service in namespace, and scrapers verify (the ServiceMonitor's
// tlsConfig.serverName).
func ServiceServerName(service, namespace string) string {
	return service + "." + namespace + ".svc"
}

// ServiceCA gives every node the service CA's certificate of the Service
// windows-exporter (OpenShift), read from ServiceCASecretName in
// Namespace through Client (the operator's cache).
// Use it by pointer: it keeps the last pair it read.
type ServiceCA struct {
	Client    client.Reader
	Namespace string
	// Service is the Service the certificate is for (windows-exporter).
	Service string

	mu sync.Mutex
	// lastCert and lastKey are the last good pair read: given while the
	// Secret is missing or being rewritten.
	lastCert, lastKey []byte
	// checked is the resourceVersion of the Secret last checked, and
	// checkErr what the check found: the Secret is parsed once per
	// version, not on every pass for every host (the API server gives a
	// changed Secret a new resourceVersion).
	checked  string
	checkErr error
	// checks counts the checks made (tests).
	checks int
}

// Serving returns the certificate and key the service-ca controller wrote,
// for any node (node and ip are not in it: scrapers verify the Service's
// name). why is always "": the service-ca controller issues and renews it,
// winnode only copies it. While the Secret is missing or does not hold a
// certificate for the Service with its key (deleted, being written again),
// the last good pair this process read is given, so that a Ready node's
// check does not fail for it; with none, that is an error naming the
// Secret.
func (s *ServiceCA) Serving(ctx context.Context, _ string, _ net.IP, _ time.Time) (certPEM, keyPEM []byte, why string, err error) {
	certPEM, keyPEM, err = s.read(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.lastCert, s.lastKey = certPEM, keyPEM
	case s.lastCert != nil:
		return s.lastCert, s.lastKey, "", nil
	}
	return certPEM, keyPEM, "", err
}

// read reads and checks the Secret the service-ca controller writes.
func (s *ServiceCA) read(ctx context.Context) (certPEM, keyPEM []byte, err error) {
	sec := &corev1.Secret{}
	err = s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: ServiceCASecretName}, sec, noCopy)
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("OpenShift's service CA has not written Secret %s/%s yet for Service %s (annotation %s): is the service-ca operator running? (oc get clusteroperator service-ca)",
			s.Namespace, ServiceCASecretName, s.Service, AnnotationServingCertSecret)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading Secret %s/%s (OpenShift's service CA): %w", s.Namespace, ServiceCASecretName, err)
	}
	certPEM, keyPEM = sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]
	if err := s.check(sec.ResourceVersion, certPEM, keyPEM); err != nil {
		return nil, nil, fmt.Errorf("the Secret %s/%s (OpenShift's service CA): %w (delete it: the service-ca controller writes it again)", s.Namespace, ServiceCASecretName, err)
	}
	return certPEM, keyPEM, nil
}

// check is CheckServingPair of the Secret's pair, made once per version
// of the Secret (a version "" is always checked).
func (s *ServiceCA) check(version string, certPEM, keyPEM []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version != "" && version == s.checked {
		return s.checkErr
	}
	s.checks++
	s.checked, s.checkErr = version, CheckServingPair(certPEM, keyPEM, ServiceServerName(s.Service, s.Namespace))
	return s.checkErr
}

// CheckServingPair checks that certPEM's first certificate names name and
// that keyPEM is its key. A pure check.
func CheckServingPair(certPEM, keyPEM []byte, name string) error {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", corev1.TLSCertKey, err)
	}
	if !slices.Contains(certs[0].DNSNames, name) {
		return fmt.Errorf("%s names %v, not %s", corev1.TLSCertKey, certs[0].DNSNames, name)
	}
	_, err = keyOf(certs[0], keyPEM)
	return err
}
