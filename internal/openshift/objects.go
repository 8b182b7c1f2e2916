package openshift

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kube-root-ca.crt is the CA bundle Kubernetes publishes in every
// namespace for clients of the API server (the root CA publisher).
const (
	rootCANamespace = "kube-system"
	rootCAConfigMap = "kube-root-ca.crt"
)

// kubeletCA is ControllerConfig machine-config-controller's
// spec.kubeAPIServerServingCAData: the CA the Machine Config Operator gives
// every kubelet as its clientCAFile.
func kubeletCA(ctx context.Context, r client.Reader) ([]byte, error) {
	var cc mcfgv1.ControllerConfig
	if err := r.Get(ctx, client.ObjectKey{Name: ControllerConfigName}, &cc); err != nil {
		return nil, fmt.Errorf("reading ControllerConfig %s (machineconfiguration.openshift.io/v1) for the kubelet CA: %w", ControllerConfigName, err)
	}
	ca := cc.Spec.KubeAPIServerServingCAData
	if len(ca) == 0 {
		return nil, fmt.Errorf("ControllerConfig %s: spec.kubeAPIServerServingCAData is empty: no kubelet CA", ControllerConfigName)
	}
	if _, err := certutil.ParseCertsPEM(ca); err != nil {
		return nil, fmt.Errorf("ControllerConfig %s: spec.kubeAPIServerServingCAData: %w", ControllerConfigName, err)
	}
	return ca, nil
}

// apiServerInternalURL is Infrastructure cluster's
// status.apiServerInternalURI: the address Linux kubelets reach the API
// server on (api-int).
func apiServerInternalURL(ctx context.Context, r client.Reader) (string, error) {
	var infra configv1.Infrastructure
	if err := r.Get(ctx, client.ObjectKey{Name: InfrastructureName}, &infra); err != nil {
		return "", fmt.Errorf("reading Infrastructure %s (config.openshift.io/v1) for the API server's internal URL: %w", InfrastructureName, err)
	}
	s := infra.Status.APIServerInternalURL
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("the API server's internal URL of Infrastructure %s (status.apiServerInternalURI) %q is not an https://host:port URL", InfrastructureName, s)
	}
	return s, nil
}

// clusterID is ClusterVersion version's spec.clusterID, which the
// installer sets once and every OpenShift component (telemetry, the
// console) uses as the cluster's identity.
func clusterID(ctx context.Context, r client.Reader) (string, error) {
	var cv configv1.ClusterVersion
	if err := r.Get(ctx, client.ObjectKey{Name: ClusterVersionName}, &cv); err != nil {
		return "", fmt.Errorf("reading ClusterVersion %s (config.openshift.io/v1) for the cluster's ID: %w", ClusterVersionName, err)
	}
	if cv.Spec.ClusterID == "" {
		return "", fmt.Errorf("ClusterVersion %s has no spec.clusterID", ClusterVersionName)
	}
	return string(cv.Spec.ClusterID), nil
}

// networks are Network cluster's Service and cluster networks: its status
// (what the network operator deployed), else its spec.
func networks(ctx context.Context, r client.Reader) (service, cluster []string, err error) {
	var n configv1.Network
	if err := r.Get(ctx, client.ObjectKey{Name: NetworkName}, &n); err != nil {
		return nil, nil, fmt.Errorf("reading Network %s (config.openshift.io/v1) for the cluster's networks: %w", NetworkName, err)
	}
	service, entries := n.Status.ServiceNetwork, n.Status.ClusterNetwork
	if len(service) == 0 {
		service, entries = n.Spec.ServiceNetwork, n.Spec.ClusterNetwork
	}
	if len(service) == 0 {
		return nil, nil, fmt.Errorf("no Service network in Network %s (status.serviceNetwork, spec.serviceNetwork)", NetworkName)
	}
	for _, e := range entries {
		cluster = append(cluster, e.CIDR)
	}
	for _, cidr := range append(append([]string{}, service...), cluster...) {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return nil, nil, fmt.Errorf("the network %q of Network %s is not a CIDR", cidr, NetworkName)
		}
	}
	return service, cluster, nil
}

// kubeRootCA is the CA bundle of ConfigMap kube-system/kube-root-ca.crt.
func kubeRootCA(ctx context.Context, r client.Reader) ([]byte, error) {
	var cm corev1.ConfigMap
	if err := r.Get(ctx, client.ObjectKey{Namespace: rootCANamespace, Name: rootCAConfigMap}, &cm); err != nil {
		return nil, fmt.Errorf("the rendered worker config carries no kubeconfig, and reading ConfigMap %s/%s for the API server's CA failed: %w", rootCANamespace, rootCAConfigMap, err)
	}
	ca := []byte(cm.Data["ca.crt"])
	if _, err := certutil.ParseCertsPEM(ca); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key ca.crt: %w", rootCANamespace, rootCAConfigMap, err)
	}
	return ca, nil
}
