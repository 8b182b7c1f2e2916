package metricstls

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Store keeps the CA and each node's serving certificate in Secrets of the
// operator's namespace, and publishes the CA's certificate.
type Store struct {
	Kube      kubernetes.Interface
	Namespace string
}

// ServingSecretName is the Secret of the nodes' serving certificates and
// keys: <node>.crt and <node>.key for each node (node names are DNS
// labels, valid data keys). One Secret, updated by name, rather than one a
// node: the operator's rights then name every Secret it may change (a
// Secret holds 1 MiB, about 700 nodes' pairs).
const ServingSecretName = "windows-exporter-tls"

// CA returns the metrics CA, making it on first use (two operators racing:
// the second reads the first's), and publishes its certificate in the
// ConfigMap CAConfigMapName. A CA Secret that cannot be read is an error
// naming it; it is never replaced behind the administrator's back.
func (s Store) CA(ctx context.Context) (*CA, error) {
	secrets := s.Kube.CoreV1().Secrets(s.Namespace)
	sec, err := secrets.Get(ctx, CASecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var ca *CA
		var keyPEM []byte
		if ca, keyPEM, err = NewCA(); err != nil {
			return nil, err
		}
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: CASecretName, Namespace: s.Namespace, Labels: labels()},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
		if _, err = secrets.Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			sec, err = secrets.Get(ctx, CASecretName, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the windows_exporter CA, Secret %s/%s: %w", s.Namespace, CASecretName, err)
	}
	ca, err := ParseCA(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("the windows_exporter CA, Secret %s/%s: %w (delete the Secret to have a new CA made)", s.Namespace, CASecretName, err)
	}
	return ca, s.publish(ctx, ca)
}

// publish keeps the CA's certificate in the ConfigMap scrapers read.
func (s Store) publish(ctx context.Context, ca *CA) error {
	cms := s.Kube.CoreV1().ConfigMaps(s.Namespace)
	cm, err := cms.Get(ctx, CAConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: CAConfigMapName, Namespace: s.Namespace, Labels: labels()},
			Data:       map[string]string{CAKey: string(ca.CertPEM)},
		}
		if _, err = cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			return s.publish(ctx, ca)
		}
	} else if err == nil && cm.Data[CAKey] != string(ca.CertPEM) {
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[CAKey] = string(ca.CertPEM)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("publishing the windows_exporter CA in ConfigMap %s/%s: %w", s.Namespace, CAConfigMapName, err)
	}
	return nil
}

// Serving returns node's serving certificate and key: the ones kept in
// ServingSecretName while NeedsRenewal says they serve, else new ones from
// the CA, kept there. why says why new ones were issued ("": kept).
func (s Store) Serving(ctx context.Context, node string, ip net.IP, now time.Time) (certPEM, keyPEM []byte, why string, err error) {
	ca, err := s.CA(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	// Another node's renewal may update the Secret at the same time.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, found, err := s.servingSecret(ctx)
		if err != nil {
			return err
		}
		why = "none was issued yet"
		if c, ok := sec.Data[node+".crt"]; ok {
			var renew bool
			if renew, why = NeedsRenewal(c, ca.Cert, node, ip, now); !renew {
				certPEM, keyPEM = c, sec.Data[node+".key"]
				return nil
			}
		}
		if certPEM, keyPEM, err = ca.Issue(node, ip, now); err != nil {
			return err
		}
		sec.Data[node+".crt"], sec.Data[node+".key"] = certPEM, keyPEM
		return s.saveServing(ctx, sec, found)
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("node %s's windows_exporter certificate, Secret %s/%s: %w", node, s.Namespace, ServingSecretName, err)
	}
	if keyPEM == nil {
		return nil, nil, "", fmt.Errorf("node %s's windows_exporter certificate, Secret %s/%s: no key %s.key beside its certificate", node, s.Namespace, ServingSecretName, node)
	}
	return certPEM, keyPEM, why, nil
}

// Prune drops the certificates of nodes not in keep (nodes removed).
func (s Store) Prune(ctx context.Context, keep map[string]bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, found, err := s.servingSecret(ctx)
		if err != nil || !found {
			return err
		}
		changed := false
		for k := range sec.Data {
			if !keep[strings.TrimSuffix(strings.TrimSuffix(k, ".crt"), ".key")] {
				delete(sec.Data, k)
				changed = true
			}
		}
		if !changed {
			return nil
		}
		return s.saveServing(ctx, sec, true)
	})
}

// servingSecret reads ServingSecretName, or a new one to create.
func (s Store) servingSecret(ctx context.Context) (*corev1.Secret, bool, error) {
	sec, err := s.Kube.CoreV1().Secrets(s.Namespace).Get(ctx, ServingSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ServingSecretName, Namespace: s.Namespace, Labels: labels()},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{},
		}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	return sec, true, nil
}

func (s Store) saveServing(ctx context.Context, sec *corev1.Secret, found bool) error {
	var err error
	if found {
		_, err = s.Kube.CoreV1().Secrets(s.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
	} else {
		_, err = s.Kube.CoreV1().Secrets(s.Namespace).Create(ctx, sec, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Made meanwhile by another node's pass: retry on it.
			err = apierrors.NewConflict(corev1.Resource("secrets"), ServingSecretName, err)
		}
	}
	return err
}

// labels mark winnode's metrics objects.
func labels() map[string]string {
	return map[string]string{"app.kubernetes.io/part-of": "winnode", "app.kubernetes.io/component": "windows-exporter"}
}
