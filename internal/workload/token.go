package workload

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// DefaultTokenTTL is the lifetime asked of the ServiceAccount's tokens.
const DefaultTokenTTL = time.Hour

// tokenSource issues tokens of winnode's ServiceAccount in a workload
// cluster (TokenRequest), each time with the admin kubeconfig read afresh
// from its Secret. client-go's caching token source (serviceAccountConfig)
// asks for a new one when two thirds of the last one's life have passed,
// or at once when the API server answers 401 (the ServiceAccount was
// deleted, say): so the admin kubeconfig is read at each connection, about
// every 40 minutes while the cluster is in use, and after a refused token.
type tokenSource struct {
	clusters *Clusters
	ref      winnodev1.ClusterRef
}

// Token implements oauth2.TokenSource.
func (s *tokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.clusters.timeout())
	defer cancel()
	return s.issue(ctx)
}

// issue reads the admin kubeconfig and asks for a token; should the
// ServiceAccount be gone, the access is installed again first.
func (s *tokenSource) issue(ctx context.Context) (*oauth2.Token, error) {
	admin, err := s.clusters.adminConfig(ctx, s.ref)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	ttl := orDefault(s.clusters.TokenTTL, DefaultTokenTTL)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second))}}
	ns := s.clusters.Namespace
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, ServiceAccount, req, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) {
		if err := install(ctx, admin, ns); err != nil {
			return nil, classify(s.ref, admin.Host, "installing winnode's access", err)
		}
		tr, err = kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, ServiceAccount, req, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, classify(s.ref, admin.Host, fmt.Sprintf("asking for a token of ServiceAccount %s/%s (TokenRequest)", ns, ServiceAccount), err)
	}
	// Renewed when two thirds of its life have passed: the API server may
	// have granted less than was asked.
	life := time.Until(tr.Status.ExpirationTimestamp.Time)
	return &oauth2.Token{AccessToken: tr.Status.Token, Expiry: time.Now().Add(life * 2 / 3)}, nil
}

// serviceAccountConfig is a client configuration for the cluster of admin
// that authenticates as winnode's ServiceAccount with ts's tokens, and
// trusts the server as admin does. It holds none of admin's credentials.
func serviceAccountConfig(admin *rest.Config, ts oauth2.TokenSource) *rest.Config {
	cfg := &rest.Config{
		Host:    admin.Host,
		APIPath: admin.APIPath,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:     admin.CAData,
			ServerName: admin.ServerName,
		},
		UserAgent: userAgent,
		QPS:       20,
		Burst:     40,
	}
	cfg.WrapTransport = transport.ResettableTokenSourceWrapTransport(transport.NewCachedTokenSource(ts))
	return cfg
}
