package bootstrap

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Mode is the form of join credentials (--join-credentials).
type Mode string

const (
	// ModeAuto asks the API server whether bootstrap tokens authenticate
	// (Detector) and uses them when they do, else ServiceAccount tokens.
	ModeAuto Mode = "auto"
	// ModeBootstrapToken always issues kubeadm bootstrap tokens (token.go).
	ModeBootstrapToken Mode = "bootstrap-token"
	// ModeServiceAccount always uses a join ServiceAccount per instance
	// (serviceaccount.go).
	ModeServiceAccount Mode = "service-account"
)

// ParseMode reads a --join-credentials value ("" is ModeAuto).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeBootstrapToken, ModeServiceAccount:
		return m, nil
	}
	return "", fmt.Errorf("join credentials %q: want %s, %s or %s", s, ModeAuto, ModeBootstrapToken, ModeServiceAccount)
}

// probeInstance labels the bootstrap token the Detector issues to test the
// API server. Its ID is never recorded in a WindowsInstance's status, so the
// CSR approver binds no CSR to it; it lives a few seconds (and at most ten
// minutes, should the process die before revoking it).
const probeInstance = "winnode-probe"

// Detector finds out, once per process, whether a bootstrap token winnode
// issues authenticates on this API server: it issues a labelled,
// short-lived token, asks the TokenReview API about it and revokes it.
// OpenShift's API server and several managed offerings run without
// --enable-bootstrap-token-auth; there the answer is no.
type Detector struct {
	Kube kubernetes.Interface

	mu     sync.Mutex
	known  bool
	works  bool
	reason string
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create

// Resolve turns mode into the form to use now, with the reason (for an
// event or a log line). ModeAuto is decided by a probe whose answer is kept
// until Forget; a failed probe is not kept, so the next call probes again.
func (d *Detector) Resolve(ctx context.Context, mode Mode) (Mode, string, error) {
	if mode != ModeAuto && mode != "" {
		return mode, fmt.Sprintf("--join-credentials=%s", mode), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.known {
		works, err := d.probe(ctx)
		if err != nil {
			return "", "", err
		}
		d.known, d.works = true, works
		if works {
			d.reason = "a bootstrap token winnode issued authenticates (TokenReview)"
		} else {
			d.reason = "a bootstrap token winnode issued does not authenticate (TokenReview): the API server runs without bootstrap-token authentication, as OpenShift's does"
		}
	}
	if d.works {
		return ModeBootstrapToken, d.reason, nil
	}
	return ModeServiceAccount, d.reason, nil
}

// Forget drops the cached answer: the next Resolve probes again (a join
// that failed may mean the API server's configuration changed).
func (d *Detector) Forget() {
	d.mu.Lock()
	d.known = false
	d.mu.Unlock()
}

// probe issues a token, reviews it, and revokes it. The bootstrap token
// authenticator reads Secrets through an informer, so a token just created
// may not be known for a moment: it is reviewed again for a few seconds
// before the answer is "no".
func (d *Detector) probe(ctx context.Context) (bool, error) {
	tok, err := CreateToken(ctx, d.Kube, probeInstance, 10*time.Minute)
	if err != nil {
		return false, fmt.Errorf("probing bootstrap-token authentication: %w", err)
	}
	defer func() { _ = RevokeInstanceToken(context.WithoutCancel(ctx), d.Kube, probeInstance, tok.ID) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr, err := d.Kube.AuthenticationV1().TokenReviews().Create(ctx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok.Value()}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("probing bootstrap-token authentication (TokenReview): %w", err)
		}
		if tr.Status.Authenticated {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil // never authenticated within the wait: no
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
