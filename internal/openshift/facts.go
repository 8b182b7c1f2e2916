// Package openshift reads an OpenShift cluster's own configuration, as the
// Windows Machine Config Operator does, for the facts a Windows kubelet
// shares with the cluster's Linux workers (Facts):
//
//   - the newest rendered worker MachineConfig (rendered-worker-*,
//     machineconfiguration.openshift.io/v1), whose Ignition config is parsed
//     with the Ignition project's packages (internal/ignition): the kubelet
//     unit's cloud provider and cloud config, the cluster DNS of the
//     kubelet's configuration, and the CA of the kubeconfig Linux workers
//     join with (machineconfig.go);
//   - the kubelet CA from ControllerConfig machine-config-controller
//     (spec.kubeAPIServerServingCAData, what the Machine Config Operator
//     writes to /etc/kubernetes/kubelet-ca.crt);
//   - the API server URL for kubelets from Infrastructure cluster
//     (status.apiServerInternalURI, the api-int address);
//   - the cluster and Service networks from Network cluster
//     (config.openshift.io/v1);
//   - the cluster's ID from ClusterVersion version (objects.go).
//
// It reads only; the operator's RBAC grants exactly these reads.
package openshift

import (
	"context"
	"fmt"
	"net/netip"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Facts are what winnode takes from an OpenShift cluster. None of them is a
// secret: the node-bootstrapper token in the rendered worker config is not
// kept (each host gets its own join credentials, internal/bootstrap).
type Facts struct {
	// MachineConfig names the rendered worker MachineConfig read.
	MachineConfig string
	// Server is the API server URL kubelets use (Infrastructure cluster
	// status.apiServerInternalURI).
	Server string
	// CAData is the CA bundle kubelets trust the API server with: the one
	// in the rendered worker's kubeconfig, else ConfigMap kube-root-ca.crt.
	CAData []byte
	// CASource says where CAData came from.
	CASource string
	// KubeletCA is the CA of clients of the kubelet's API (the API
	// server's kubelet client certificate): ControllerConfig
	// spec.kubeAPIServerServingCAData.
	KubeletCA []byte
	// CloudProvider is the Linux kubelet's --cloud-provider ("" or
	// "external"), and CloudConfig the contents of its --cloud-config file
	// (nil when it has none).
	CloudProvider string
	CloudConfig   []byte
	// ClusterDNS and ClusterDomain are the Linux kubelet's (its
	// KubeletConfiguration), else the tenth address of the first Service
	// network and cluster.local, as the Windows Machine Config Operator
	// derives them.
	ClusterDNS    []string
	ClusterDomain string
	// ServiceNetwork and ClusterNetwork are the Network config's ranges.
	ServiceNetwork []string
	ClusterNetwork []string
	// ClusterID is ClusterVersion's spec.clusterID: the cluster's identity,
	// which outlives rotations of its CA bundle.
	ClusterID string
}

// Names of the cluster-wide objects read.
const (
	ControllerConfigName = "machine-config-controller"
	ClusterVersionName   = "version"
	InfrastructureName   = "cluster"
	NetworkName          = "cluster"
)

// Load reads the facts from the cluster's objects through r (a client whose
// scheme has Scheme's types; NewReader builds one).
func Load(ctx context.Context, r client.Reader) (*Facts, error) {
	mc, err := newestRenderedWorker(ctx, r)
	if err != nil {
		return nil, err
	}
	w, err := ParseRenderedWorker(mc)
	if err != nil {
		return nil, err
	}
	f := &Facts{MachineConfig: mc.Name, CloudProvider: w.CloudProvider, CloudConfig: w.CloudConfig,
		ClusterDNS: w.ClusterDNS, ClusterDomain: w.ClusterDomain, CAData: w.CAData}
	f.CASource = "the kubeconfig of MachineConfig " + mc.Name
	if f.KubeletCA, err = kubeletCA(ctx, r); err != nil {
		return nil, err
	}
	if f.Server, err = apiServerInternalURL(ctx, r); err != nil {
		return nil, err
	}
	if f.ServiceNetwork, f.ClusterNetwork, err = networks(ctx, r); err != nil {
		return nil, err
	}
	if f.ClusterID, err = clusterID(ctx, r); err != nil {
		return nil, err
	}
	if len(f.CAData) == 0 {
		if f.CAData, err = kubeRootCA(ctx, r); err != nil {
			return nil, err
		}
		f.CASource = "ConfigMap " + rootCANamespace + "/" + rootCAConfigMap
	}
	if len(f.ClusterDNS) == 0 {
		dns, err := tenthAddress(f.ServiceNetwork[0])
		if err != nil {
			return nil, fmt.Errorf("the Service network %q of Network %s: %w", f.ServiceNetwork[0], NetworkName, err)
		}
		f.ClusterDNS, f.ClusterDomain = []string{dns}, ""
	}
	if f.ClusterDomain == "" {
		f.ClusterDomain = "cluster.local"
	}
	return f, nil
}

// tenthAddress is the tenth address of a range: the cluster DNS Service's
// address on OpenShift (its DNS operator's rule, which the Windows Machine
// Config Operator also applies).
func tenthAddress(cidr string) (string, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", err
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return "", fmt.Errorf("too small for a DNS Service address")
	}
	return a.String(), nil
}
