package configure

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/platform"
)

// EventReasonClusterFacts is the Normal event, sent when a plan is about
// to be applied, that says which platform the cluster facts came from, why,
// and from which objects.
const EventReasonClusterFacts = "ClusterFacts"

// clusterFacts gathers what the plan needs to know about the cluster and
// what the join credentials name (the API server URL and CA), from the
// platform's own objects (platform.go in internal/platform says which):
//
//   - kubernetes: kube-public/cluster-info and kubeadm's kubelet-config
//     (or the kube-dns Service);
//   - openshift: the rendered worker MachineConfig, the ControllerConfig,
//     and the Infrastructure and Network configs (internal/openshift).
//
// It also returns a sentence saying where they came from (for an event).
// Within a pass (Configure, Deconfigure) they are read once: the
// pre-flight request and the credentials both need them.
func (c *Configurer) clusterFacts(ctx context.Context) (*bootstrap.ClusterInfo, plan.ClusterFacts, string, error) {
	if c.pass != nil && c.pass.facts != nil {
		f := c.pass.facts
		return f.info, f.cluster, f.where, nil
	}
	ci, facts, where, err := c.readClusterFacts(ctx)
	if err == nil && c.pass != nil {
		c.pass.facts = &passFacts{info: ci, cluster: facts, where: where}
	}
	return ci, facts, where, err
}

// passFacts are the cluster facts clusterFacts read in this pass.
type passFacts struct {
	info    *bootstrap.ClusterInfo
	cluster plan.ClusterFacts
	where   string
}

// readClusterFacts reads what clusterFacts returns.
func (c *Configurer) readClusterFacts(ctx context.Context) (*bootstrap.ClusterInfo, plan.ClusterFacts, string, error) {
	p, why, err := c.platform()
	if err != nil {
		return nil, plan.ClusterFacts{}, "", err
	}
	if p != platform.OpenShift {
		ci, err := bootstrap.LoadClusterInfo(ctx, c.Kube)
		if err != nil {
			return nil, plan.ClusterFacts{}, "", err
		}
		where := fmt.Sprintf("platform %s (%s): API server %s and CA from ConfigMap kube-public/cluster-info", p, why, ci.Server)
		if c.APIServer != "" {
			ci.Server = c.APIServer
			where = fmt.Sprintf("platform %s (%s): API server %s (the Cluster's control plane endpoint), CA from ConfigMap kube-public/cluster-info", p, why, ci.Server)
		}
		dns, domain := clusterDNS(ctx, c.Kube)
		facts := plan.ClusterFacts{Server: ci.Server, CAData: ci.CAData, ClusterDNS: dns, ClusterDomain: domain}
		return ci, facts, where, nil
	}
	if c.OpenShift == nil {
		return nil, plan.ClusterFacts{}, "", errors.New("platform openshift, but no client for OpenShift's configuration objects is configured")
	}
	f, err := openshift.Load(ctx, c.OpenShift)
	if err != nil {
		return nil, plan.ClusterFacts{}, "", fmt.Errorf("reading OpenShift's configuration (platform %s: %s): %w", p, why, err)
	}
	// The Service range of the Network config is the cluster's, whatever
	// --service-cidr says.
	c.ServiceCIDR = f.ServiceNetwork[0]
	ci := &bootstrap.ClusterInfo{Server: f.Server, CAData: f.CAData}
	facts := plan.ClusterFacts{
		Server: f.Server, CAData: f.CAData, ClusterDNS: f.ClusterDNS, ClusterDomain: f.ClusterDomain,
		KubeletCAData: f.KubeletCA, CloudProvider: f.CloudProvider,
		PlatformClusterID: f.ClusterID,
	}
	return ci, facts, describeOpenShift(p, why, f), nil
}

// describeOpenShift says where each OpenShift fact came from.
func describeOpenShift(p platform.Platform, why string, f *openshift.Facts) string {
	cloud := "no cloud provider"
	if f.CloudProvider != "" {
		cloud = "cloud provider " + f.CloudProvider
	}
	if len(f.CloudConfig) > 0 {
		// The Linux kubelets' --cloud-config has no Windows counterpart:
		// the kubelet winnode ships (Kubernetes v1.37) has no such flag.
		cloud += " (its cloud config is not used: the kubelet has no --cloud-config)"
	}
	return fmt.Sprintf("platform %s (%s): kubelet settings (%s, cluster DNS %s) from MachineConfig %s; kubelet CA from ControllerConfig %s; API server %s from Infrastructure %s; its CA from %s; Service network %s, cluster network %s from Network %s; cluster ID from ClusterVersion %s",
		p, why, cloud, strings.Join(f.ClusterDNS, ","), f.MachineConfig, openshift.ControllerConfigName,
		f.Server, openshift.InfrastructureName, f.CASource,
		strings.Join(f.ServiceNetwork, ","), strings.Join(f.ClusterNetwork, ","), openshift.NetworkName, openshift.ClusterVersionName)
}

// platform resolves c.Platform: auto asks the API server's discovery.
func (c *Configurer) platform() (platform.Platform, string, error) {
	if c.Platform != "" && c.Platform != platform.Auto {
		why := c.PlatformReason
		if why == "" {
			why = "--platform=" + string(c.Platform)
		}
		return c.Platform, why, nil
	}
	return platform.Resolve(c.Kube.Discovery(), platform.Auto)
}
