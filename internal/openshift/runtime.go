package openshift

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What OpenShift says about the container runtime's surroundings, as the
// Windows Machine Config Operator reads it: the image mirror sets, the
// global pull secret (whose credentials go into the mirrors' hosts.toml),
// the cluster-wide proxy (its status: what the cluster computed from its
// spec, NO_PROXY included) and the proxy's trusted CA bundle.
const (
	// ConfigNamespace holds the cluster's own configuration objects.
	ConfigNamespace = "openshift-config"
	// PullSecretName is the global pull secret, in ConfigNamespace.
	PullSecretName = "pull-secret"
	// ProxyName is the one Proxy object (proxy.config.openshift.io).
	ProxyName = "cluster"
	// TrustedCAKey is the key of the proxy's CA bundle ConfigMap.
	TrustedCAKey = "ca-bundle.crt"
)

// Runtime is what OpenShift says for the container runtime.
type Runtime struct {
	IDMS []configv1.ImageDigestMirrorSet
	ITMS []configv1.ImageTagMirrorSet
	// PullSecret is the global pull secret's .dockerconfigjson (nil: none).
	PullSecret []byte
	// Proxy is the Proxy's status.
	Proxy configv1.ProxyStatus
	// TrustedCA is the proxy's CA bundle: the ConfigMap spec.trustedCA
	// names, in ConfigNamespace (nil: none).
	TrustedCA []byte
	// TrustedCASource names that ConfigMap, for events.
	TrustedCASource string
}

// LoadRuntime reads them. A cluster without a Proxy object, pull secret or
// CA bundle has none of them; the mirror sets must be listable.
func LoadRuntime(ctx context.Context, r client.Reader) (*Runtime, error) {
	out := &Runtime{}
	var idms configv1.ImageDigestMirrorSetList
	if err := r.List(ctx, &idms); err != nil {
		return nil, fmt.Errorf("listing ImageDigestMirrorSets (config.openshift.io/v1): %w", err)
	}
	var itms configv1.ImageTagMirrorSetList
	if err := r.List(ctx, &itms); err != nil {
		return nil, fmt.Errorf("listing ImageTagMirrorSets (config.openshift.io/v1): %w", err)
	}
	out.IDMS, out.ITMS = idms.Items, itms.Items
	var secret corev1.Secret
	switch err := r.Get(ctx, client.ObjectKey{Namespace: ConfigNamespace, Name: PullSecretName}, &secret); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading the global pull secret %s/%s: %w", ConfigNamespace, PullSecretName, err)
	default:
		out.PullSecret = secret.Data[corev1.DockerConfigJsonKey]
	}
	var proxy configv1.Proxy
	switch err := r.Get(ctx, client.ObjectKey{Name: ProxyName}, &proxy); {
	case apierrors.IsNotFound(err):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("reading Proxy %s (config.openshift.io/v1): %w", ProxyName, err)
	}
	out.Proxy = proxy.Status
	if name := proxy.Spec.TrustedCA.Name; name != "" {
		var cm corev1.ConfigMap
		if err := r.Get(ctx, client.ObjectKey{Namespace: ConfigNamespace, Name: name}, &cm); err != nil {
			return nil, fmt.Errorf("reading the proxy's CA bundle, ConfigMap %s/%s (Proxy %s spec.trustedCA): %w", ConfigNamespace, name, ProxyName, err)
		}
		out.TrustedCA = []byte(cm.Data[TrustedCAKey])
		out.TrustedCASource = ConfigNamespace + "/" + name
	}
	return out, nil
}
