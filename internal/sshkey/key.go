package sshkey

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// The Secret of the operator's key (names are a contract with administrators).
const (
	// PrivateKeySecret, in the operator namespace, holds the SSH private key
	// the operator logs in to every host with, under PrivateKeyKey.
	PrivateKeySecret = "cloud-private-key"
	PrivateKeyKey    = "private-key.pem"
)

// MinRSABits is the smallest RSA key the operator accepts.
const MinRSABits = 2048

// KeyError says why there is no usable private key. Reason is a condition
// reason (winnodev1.ReasonNoPrivateKey or winnodev1.ReasonInvalidPrivateKey)
// the instance reconciler can put on its Reachable condition; the message
// never contains key material.
type KeyError struct {
	Reason string
	Err    error
}

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// ParsePrivateKey parses an SSH private key in any PEM form
// golang.org/x/crypto/ssh reads (PKCS#1, PKCS#8, OpenSSH) and accepts only
// RSA of at least MinRSABits bits or ed25519. Errors are *KeyError with
// reason InvalidPrivateKey and say what to do.
func ParsePrivateKey(pemBytes []byte) (ssh.Signer, error) {
	invalid := func(format string, args ...any) error {
		return &KeyError{Reason: winnodev1.ReasonInvalidPrivateKey, Err: fmt.Errorf(format, args...)}
	}
	if len(pemBytes) == 0 {
		return nil, invalid("Secret %s key %s is empty; put a PEM private key there (RSA of at least %d bits or ed25519)", PrivateKeySecret, PrivateKeyKey, MinRSABits)
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		var pass *ssh.PassphraseMissingError
		if errors.As(err, &pass) {
			return nil, invalid("Secret %s key %s is protected by a passphrase; store it unencrypted (ssh-keygen -p -N '' -f KEY)", PrivateKeySecret, PrivateKeyKey)
		}
		// The parser's message never quotes the key.
		return nil, invalid("Secret %s key %s is not a PEM private key the operator can read (PKCS#1, PKCS#8 or OpenSSH): %v", PrivateKeySecret, PrivateKeyKey, err)
	}
	switch pub := signer.PublicKey(); pub.Type() {
	case ssh.KeyAlgoED25519:
		return signer, nil
	case ssh.KeyAlgoRSA:
		cpk, ok := pub.(ssh.CryptoPublicKey)
		if !ok {
			return nil, invalid("Secret %s key %s: cannot read the RSA key's size", PrivateKeySecret, PrivateKeyKey)
		}
		rsaPub, ok := cpk.CryptoPublicKey().(*rsa.PublicKey)
		if !ok {
			return nil, invalid("Secret %s key %s: cannot read the RSA key's size", PrivateKeySecret, PrivateKeyKey)
		}
		if bits := rsaPub.N.BitLen(); bits < MinRSABits {
			return nil, invalid("Secret %s key %s is a %d-bit RSA key, too weak; use RSA of at least %d bits or ed25519 (ssh-keygen -t ed25519)", PrivateKeySecret, PrivateKeyKey, bits, MinRSABits)
		}
		return signer, nil
	default:
		return nil, invalid("Secret %s key %s is a %s key; the operator accepts RSA (at least %d bits) or ed25519", PrivateKeySecret, PrivateKeyKey, pub.Type(), MinRSABits)
	}
}

// LoadSigner reads and checks the operator's private key from Secret
// cloud-private-key in namespace. This is how the instance reconciler (and
// winnodectl ssh) learn the signer: call it at the start of each reconcile,
// so a rotated key is used at once. Errors are *KeyError: reason
// NoPrivateKey when the Secret or key is missing, InvalidPrivateKey when the
// key is unusable.
func LoadSigner(ctx context.Context, c client.Reader, namespace string) (ssh.Signer, error) {
	data, err := loadKey(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	return ParsePrivateKey(data)
}

// loadKey reads the private key's bytes from Secret cloud-private-key.
func loadKey(ctx context.Context, c client.Reader, namespace string) ([]byte, error) {
	var s corev1.Secret
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: PrivateKeySecret}, &s)
	if apierrors.IsNotFound(err) {
		return nil, &KeyError{Reason: winnodev1.ReasonNoPrivateKey, Err: fmt.Errorf(
			"the Secret %s/%s does not exist; create it with the operator's SSH private key: kubectl -n %s create secret generic %s --from-file=%s=KEY",
			namespace, PrivateKeySecret, namespace, PrivateKeySecret, PrivateKeyKey)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, PrivateKeySecret, err)
	}
	data, ok := s.Data[PrivateKeyKey]
	if !ok {
		return nil, &KeyError{Reason: winnodev1.ReasonNoPrivateKey, Err: fmt.Errorf(
			"the Secret %s/%s has no key %s; put the operator's SSH private key under that key", namespace, PrivateKeySecret, PrivateKeyKey)}
	}
	return data, nil
}

// SignerCache is LoadSigner that parses the key only when it changes: the
// instance reconciler needs the signer on every reconcile of every
// instance (so that a rotated key is used at once), and parsing an RSA key
// is costly (4.7 ms for 4096 bits on the benchmark machine of
// docs/performance.md, checks included), while reading the Secret from the
// manager's cache is not. The zero value is ready to use.
type SignerCache struct {
	mu     sync.Mutex
	sum    [sha256.Size]byte
	signer ssh.Signer
}

// Load is LoadSigner, reusing the signer parsed from the same key bytes.
func (sc *SignerCache) Load(ctx context.Context, c client.Reader, namespace string) (ssh.Signer, error) {
	data, err := loadKey(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	return sc.parse(data)
}

// parse is ParsePrivateKey, remembered for the last key bytes that parsed
// (errors are not remembered: a bad key is reported on each call).
func (sc *SignerCache) parse(data []byte) (ssh.Signer, error) {
	sum := sha256.Sum256(data)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.signer != nil && sum == sc.sum {
		return sc.signer, nil
	}
	s, err := ParsePrivateKey(data)
	if err != nil {
		return nil, err
	}
	sc.sum, sc.signer = sum, s
	return s, nil
}

// KeyFingerprint is the SHA256 fingerprint ("SHA256:...") of the signer's
// public key: the value of the user data Secret's
// winnodev1.AnnotationKeyFingerprint annotation, and what the instance
// reconciler records in Status.KeyFingerprint. A difference between the two
// means the key was rotated and the host must be given the new one.
func KeyFingerprint(s ssh.Signer) string { return ssh.FingerprintSHA256(s.PublicKey()) }
