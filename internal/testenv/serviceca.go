package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/retry"
)

// OpenShift's service CA where winnode touches it, as the service-ca
// operator's controllers do (github.com/openshift/service-ca-operator,
// pkg/controller/servingcert and pkg/controller/cabundleinjector; that
// module is not served by the Go module proxy, so the openshift flavor
// runs this simulated stand-in instead of the real controller):
//   - a Service annotated service.beta.openshift.io/serving-cert-secret-name
//     gets that Secret, of type kubernetes.io/tls, annotated with the
//     Service's name and UID (service.beta.openshift.io/originating-service-*)
//     and the expiry, owned by the Service, its tls.crt a certificate for
//     <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local,
//     valid two years, signed by the service CA and followed by the CA's
//     certificate, tls.key its RSA key; the Service is then annotated
//     service.beta.openshift.io/serving-cert-signed-by with the CA's name.
//     A Secret of that name that does not hold a certificate of the current
//     CA naming those names is written again; one that belongs to another
//     Service (another UID) is left alone, the Service annotated
//     service.beta.openshift.io/serving-cert-generation-error.
//   - a ConfigMap annotated service.beta.openshift.io/inject-cabundle=true
//     gets the CA bundle as its only data, under service-ca.crt.
//   - rotate makes a new CA as deleting the operator's signing key (Secret
//     openshift-service-ca/signing-key) does, the manual rotation OpenShift
//     documents: at once and with no grace period, so the bundle becomes
//     the new CA alone (the cross-signed certificates that bridge old and
//     new belong to the automated rotation before expiry, which the
//     stand-in does not make), and every serving Secret is written again,
//     its certificate's AuthorityKeyId no longer the CA's SubjectKeyId.
//
// The CA is named openshift-service-serving-signer@<unix time>, as the
// operator names it.
//
// The names are OpenShift's (service-ca-operator's pkg/controller/api),
// spelt here rather than taken from winnode's packages: the stand-in
// copies the platform, not winnode.
const (
	serviceCALifetime         = 2 * 365 * 24 * time.Hour
	annotationServingCertName = "service.beta.openshift.io/serving-cert-secret-name"
	annotationInjectCABundle  = "service.beta.openshift.io/inject-cabundle"
	serviceCABundleKey        = "service-ca.crt"
	annotationSignedBy        = "service.beta.openshift.io/serving-cert-signed-by"
	annotationOriginName      = "service.beta.openshift.io/originating-service-name"
	annotationOriginUID       = "service.beta.openshift.io/originating-service-uid"
	annotationExpiry          = "service.beta.openshift.io/expiry"
	annotationGenerationError = "service.beta.openshift.io/serving-cert-generation-error"
)

// serviceCA is the simulated service-ca controller's state.
type serviceCA struct {
	// signer is the current CA; each sync reads it once, so that a
	// rotation meanwhile never mixes two CAs in one object.
	signer atomic.Pointer[signer]
	client kubernetes.Interface
	log    io.Writer
}

// signer is a service CA: its certificate (also in PEM) and key.
type signer struct {
	cert   *x509.Certificate
	certPE []byte
	key    *rsa.PrivateKey
}

func newSigner() (*signer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: fmt.Sprintf("openshift-service-serving-signer@%d", time.Now().Unix())}, key)
	if err != nil {
		return nil, err
	}
	return &signer{cert: ca, certPE: pemCert(ca.Raw), key: key}, nil
}

// bundle is the current CA's certificate in PEM: what annotated
// ConfigMaps get.
func (s *serviceCA) bundle() []byte { return s.signer.Load().certPE }

// startServiceCA runs the simulated service-ca controller against the API
// server of cfg until ctx ends, logging to log.
func startServiceCA(ctx context.Context, cfg *rest.Config, log io.Writer) (*serviceCA, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sg, err := newSigner()
	if err != nil {
		return nil, err
	}
	s := &serviceCA{client: client, log: log}
	s.signer.Store(sg)
	// A resync every few seconds retries what could not be written, as
	// the real controllers' queues retry failed keys.
	factory := informers.NewSharedInformerFactory(client, 5*time.Second)
	for informer, sync := range map[cache.SharedIndexInformer]func(context.Context, any){
		factory.Core().V1().Services().Informer():   s.syncService,
		factory.Core().V1().ConfigMaps().Informer(): s.syncConfigMap,
		factory.Core().V1().Secrets().Informer():    s.syncSecret,
	} {
		handlers := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { sync(ctx, obj) },
			UpdateFunc: func(_, obj any) { sync(ctx, obj) },
		}
		if informer == factory.Core().V1().Secrets().Informer() {
			// A serving Secret deleted is written again at once, as the
			// real controller's watch of Secrets does.
			handlers.DeleteFunc = func(obj any) { sync(ctx, obj) }
		}
		if _, err := informer.AddEventHandler(handlers); err != nil {
			return nil, err
		}
	}
	s.logf("started; service CA %s", sg.cert.Subject.CommonName)
	factory.Start(ctx.Done())
	return s, nil
}

// rotate replaces the CA (the manual rotation: see above) and writes the
// new bundle and serving certificates at once, rather than at the next
// resync, and returns the new CA's certificate in PEM.
func (s *serviceCA) rotate(ctx context.Context) ([]byte, error) {
	sg, err := newSigner()
	if err != nil {
		return nil, err
	}
	s.signer.Store(sg)
	s.logf("signing key replaced (manual rotation, no grace period); service CA %s", sg.cert.Subject.CommonName)
	cms, err := s.client.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range cms.Items {
		s.syncConfigMap(ctx, &cms.Items[i])
	}
	svcs, err := s.client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range svcs.Items {
		s.syncService(ctx, &svcs.Items[i])
	}
	return sg.certPE, nil
}

func (s *serviceCA) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "%s service-ca controller (simulated): "+format+"\n", append([]any{time.Now().UTC().Format(time.RFC3339)}, args...)...)
}

// syncConfigMap writes the CA bundle into an annotated ConfigMap.
func (s *serviceCA) syncConfigMap(ctx context.Context, obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	bundle := s.bundle()
	if !ok || cm.Annotations[annotationInjectCABundle] != "true" ||
		(len(cm.Data) == 1 && cm.Data[serviceCABundleKey] == string(bundle)) {
		return
	}
	cm = cm.DeepCopy()
	cm.Data = map[string]string{serviceCABundleKey: string(bundle)}
	if _, err := s.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		s.logf("injecting the CA bundle into ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err)
		return
	}
	s.logf("injected the CA bundle into ConfigMap %s/%s", cm.Namespace, cm.Name)
}

// syncSecret handles the Service a serving Secret was written for.
func (s *serviceCA) syncSecret(ctx context.Context, obj any) {
	sec, ok := obj.(*corev1.Secret)
	if !ok || sec.Annotations[annotationOriginName] == "" {
		return
	}
	svc, err := s.client.CoreV1().Services(sec.Namespace).Get(ctx, sec.Annotations[annotationOriginName], metav1.GetOptions{})
	if err == nil {
		s.syncService(ctx, svc)
	}
}

// syncService writes the serving Secret an annotated Service names.
func (s *serviceCA) syncService(ctx context.Context, obj any) {
	svc, ok := obj.(*corev1.Service)
	name := ""
	if ok {
		name = svc.Annotations[annotationServingCertName]
	}
	if name == "" {
		return
	}
	sg := s.signer.Load()
	secrets := s.client.CoreV1().Secrets(svc.Namespace)
	old, err := secrets.Get(ctx, name, metav1.GetOptions{})
	found := err == nil
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		s.logf("reading Secret %s/%s: %v", svc.Namespace, name, err)
		return
	case found && old.Annotations[annotationOriginUID] != string(svc.UID):
		s.annotate(ctx, svc, annotationGenerationError, fmt.Sprintf("secret %s/%s does not have corresponding service UID %v", svc.Namespace, name, svc.UID))
		return
	case found && current(sg, old, svc):
		return
	}
	secret, err := servingSecret(sg, svc, name)
	if err == nil && !found {
		_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
	} else if err == nil {
		secret.ResourceVersion = old.ResourceVersion
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		s.logf("writing Secret %s/%s for Service %s: %v", svc.Namespace, name, svc.Name, err)
		return
	}
	s.logf("issued the serving certificate of Service %s/%s into Secret %s", svc.Namespace, svc.Name, name)
	s.annotate(ctx, svc, annotationSignedBy, sg.cert.Subject.CommonName)
}

// current says whether a Secret holds a certificate of the CA sg naming
// the Service's names.
func current(sg *signer, sec *corev1.Secret, svc *corev1.Service) bool {
	certs, err := certutil.ParseCertsPEM(sec.Data[corev1.TLSCertKey])
	if err != nil || !bytes.Equal(certs[0].AuthorityKeyId, sg.cert.SubjectKeyId) {
		return false
	}
	for _, n := range serviceNames(svc) {
		if !slices.Contains(certs[0].DNSNames, n) {
			return false
		}
	}
	return true
}

func serviceNames(svc *corev1.Service) []string {
	host := svc.Name + "." + svc.Namespace + ".svc"
	return []string{host, host + ".cluster.local"}
}

// servingSecret issues the Service's certificate, signed by sg, into a
// Secret named name.
func servingSecret(sg *signer, svc *corev1.Service, name string) (*corev1.Secret, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	names := serviceNames(svc)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Second), NotAfter: now.Add(serviceCALifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, sg.cert, &key.PublicKey, sg.key)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: svc.Namespace,
			Annotations: map[string]string{annotationOriginName: svc.Name, annotationOriginUID: string(svc.UID),
				annotationExpiry: tmpl.NotAfter.UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: append(pemCert(der), sg.certPE...), corev1.TLSPrivateKeyKey: keyPEM},
	}, nil
}

// annotate sets one annotation of the Service.
func (s *serviceCA) annotate(ctx context.Context, svc *corev1.Service, key, value string) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.client.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil || cur.Annotations[key] == value {
			return err
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[key] = value
		_, err = s.client.CoreV1().Services(svc.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.logf("annotating Service %s/%s: %v", svc.Namespace, svc.Name, err)
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
}
