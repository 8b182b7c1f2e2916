package metricstls

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Store keeps the CA and each node's serving certificate in Secrets of the
// operator's namespace, and publishes the CA's certificate.
//
// It reads through Client, in the operator the manager's client, whose
// cache holds the Secrets and ConfigMaps of the namespace: a pass of a
// Ready host reads the CA and the serving Secret (up to 1 MiB) from memory,
// without copying them, and writes only what changed (a new CA, a renewed
// certificate, a pruned node). A cache lags its own writes: after a
// conflict or an "already exists", the next attempt reads Live (the API
// server). Use a Store by pointer: it keeps the parsed CA.
type Store struct {
	Client    client.Client
	Live      client.Reader
	Namespace string

	mu sync.Mutex
	// ca is the CA parsed from the Secret of caVersion (its
	// resourceVersion): parsed again only when the Secret changes.
	ca        *CA
	caVersion string
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
func (s *Store) CA(ctx context.Context) (*CA, error) {
	sec, err := s.caSecret(ctx)
	if err != nil {
		return nil, fmt.Errorf("the windows_exporter CA, Secret %s/%s: %w", s.Namespace, CASecretName, err)
	}
	s.mu.Lock()
	ca, version := s.ca, s.caVersion
	s.mu.Unlock()
	if ca == nil || version != string(sec.UID)+"/"+sec.ResourceVersion {
		if ca, err = ParseCA(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]); err != nil {
			return nil, fmt.Errorf("the windows_exporter CA, Secret %s/%s: %w (delete the Secret to have a new CA made)", s.Namespace, CASecretName, err)
		}
		s.mu.Lock()
		s.ca, s.caVersion = ca, string(sec.UID)+"/"+sec.ResourceVersion
		s.mu.Unlock()
	}
	return ca, s.publish(ctx, ca)
}

// caSecret reads the CA's Secret, or makes it. Not copied: read only.
func (s *Store) caSecret(ctx context.Context) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	key := client.ObjectKey{Namespace: s.Namespace, Name: CASecretName}
	err := s.Client.Get(ctx, key, sec, noCopy)
	if !apierrors.IsNotFound(err) {
		return sec, err
	}
	ca, keyPEM, err := NewCA()
	if err != nil {
		return nil, err
	}
	sec = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: CASecretName, Namespace: s.Namespace, Labels: Labels()},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
	if err = s.Client.Create(ctx, sec); apierrors.IsAlreadyExists(err) {
		// Another operator's, or ours not yet in the cache.
		sec = &corev1.Secret{}
		err = s.Live.Get(ctx, key, sec)
	}
	return sec, err
}

// publish keeps the CA's certificate in the ConfigMap scrapers read.
func (s *Store) publish(ctx context.Context, ca *CA) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, s.attempts(func(r client.Reader, opts ...client.GetOption) error {
		cm := &corev1.ConfigMap{}
		err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: CAConfigMapName}, cm, opts...)
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: CAConfigMapName, Namespace: s.Namespace, Labels: Labels()},
				Data:       map[string]string{CAKey: string(ca.CertPEM)},
			}
			return asConflict(s.Client.Create(ctx, cm), "configmaps", CAConfigMapName)
		case err != nil || cm.Data[CAKey] == string(ca.CertPEM):
			return err
		}
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[CAKey] = string(ca.CertPEM)
		return s.Client.Update(ctx, cm)
	}))
	if err != nil {
		return fmt.Errorf("publishing the windows_exporter CA in ConfigMap %s/%s: %w", s.Namespace, CAConfigMapName, err)
	}
	return nil
}

// Serving returns node's serving certificate and key: the ones kept in
// ServingSecretName while NeedsRenewal says they serve, else new ones from
// the CA, kept there. why says why new ones were issued ("": kept). The
// slices returned are shared with the cache: read only.
func (s *Store) Serving(ctx context.Context, node string, ip net.IP, now time.Time) (certPEM, keyPEM []byte, why string, err error) {
	ca, err := s.CA(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	// Another node's renewal may update the Secret at the same time.
	err = retry.RetryOnConflict(retry.DefaultRetry, s.attempts(func(r client.Reader, opts ...client.GetOption) error {
		sec, found, err := s.servingSecret(ctx, r, opts...)
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
		sec = sec.DeepCopy()
		sec.Data[node+".crt"], sec.Data[node+".key"] = certPEM, keyPEM
		return s.saveServing(ctx, sec, found)
	}))
	if err != nil {
		return nil, nil, "", fmt.Errorf("node %s's windows_exporter certificate, Secret %s/%s: %w", node, s.Namespace, ServingSecretName, err)
	}
	if keyPEM == nil {
		return nil, nil, "", fmt.Errorf("node %s's windows_exporter certificate, Secret %s/%s: no key %s.key beside its certificate", node, s.Namespace, ServingSecretName, node)
	}
	return certPEM, keyPEM, why, nil
}

// Prune drops the certificates of nodes not in keep (nodes removed).
func (s *Store) Prune(ctx context.Context, keep map[string]bool) error {
	return s.drop(ctx, func(node string) bool { return !keep[node] })
}

// Forget drops node's certificate (winnodectl remove: a node added without
// the operator, whose certificates no operator prunes).
func (s *Store) Forget(ctx context.Context, node string) error {
	return s.drop(ctx, func(n string) bool { return n == node })
}

// drop deletes the certificates and keys of the nodes gone says.
func (s *Store) drop(ctx context.Context, gone func(node string) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, s.attempts(func(r client.Reader, opts ...client.GetOption) error {
		sec, found, err := s.servingSecret(ctx, r, opts...)
		if err != nil || !found {
			return err
		}
		var keys []string
		for k := range sec.Data {
			if gone(strings.TrimSuffix(strings.TrimSuffix(k, ".crt"), ".key")) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return nil
		}
		sec = sec.DeepCopy()
		for _, k := range keys {
			delete(sec.Data, k)
		}
		return s.saveServing(ctx, sec, true)
	}))
}

// noCopy reads a cached object without copying it: what is read that way
// is never changed (DeepCopy first).
var noCopy = &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}

// attempts gives each attempt of a retry its reader: the first reads the
// cache, uncopied; the next ones, after a conflict, read the API server,
// since the cache may not hold the write that conflicted yet.
func (s *Store) attempts(try func(r client.Reader, opts ...client.GetOption) error) func() error {
	first := true
	return func() error {
		if first {
			first = false
			return try(s.Client, noCopy)
		}
		return try(s.Live)
	}
}

// servingSecret reads ServingSecretName with r, or a new one to create.
func (s *Store) servingSecret(ctx context.Context, r client.Reader, opts ...client.GetOption) (*corev1.Secret, bool, error) {
	sec := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: ServingSecretName}, sec, opts...)
	if apierrors.IsNotFound(err) {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ServingSecretName, Namespace: s.Namespace, Labels: Labels()},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{},
		}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if sec.Data == nil {
		sec = sec.DeepCopy()
		sec.Data = map[string][]byte{}
	}
	return sec, true, nil
}

func (s *Store) saveServing(ctx context.Context, sec *corev1.Secret, found bool) error {
	if found {
		return s.Client.Update(ctx, sec)
	}
	// Made meanwhile by another node's pass: retry on it.
	return asConflict(s.Client.Create(ctx, sec), "secrets", ServingSecretName)
}

// asConflict turns an "already exists" of a create into a conflict, which
// the retry answers by reading the object afresh.
func asConflict(err error, resource, name string) error {
	if apierrors.IsAlreadyExists(err) {
		return apierrors.NewConflict(corev1.Resource(resource), name, err)
	}
	return err
}

// Labels mark winnode's metrics objects.
func Labels() map[string]string {
	return map[string]string{"app.kubernetes.io/part-of": "winnode", "app.kubernetes.io/component": "windows-exporter"}
}
