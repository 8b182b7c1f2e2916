package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"time"

	"github.com/winnode/winnode/internal/plan"
)

// PodNetworkOptions are the inputs of `winnode-agent pod-network`.
type PodNetworkOptions struct {
	// ConfigFile is the pod network's settings (plan.PodNetworkPath).
	ConfigFile string
	// PollInterval is how often the node's kubeconfig (plan.KubeconfigPath,
	// a local file) is looked for while the kubelet has not written it
	// (default 500ms). The Node itself is watched, not polled
	// (podnetwork_wait.go).
	PollInterval time.Duration
	// WaitOnly waits for the subnet and writes nothing: flanneld's
	// service, whose flanneld exits without the node's credentials.
	WaitOnly bool
}

// PodNetworkDocument is what `winnode-agent pod-network` prints: the node,
// the subnet it waited for, and each file written or left as it was.
type PodNetworkDocument struct {
	SchemaVersion string            `json:"schemaVersion"`
	NodeName      string            `json:"nodeName"`
	PodCIDR       string            `json:"podCIDR"`
	Files         []plan.FileResult `json:"files"`
}

// PodNetwork writes the files that depend on the node's pod subnet (the
// CNI configuration and kube-proxy's, plan.SubnetFiles). kube-proxy's
// service runs it before kube-proxy at each start (winnode-service.exe
// --before; internal/plan, podnetwork.go says why the plan cannot carry
// them). It reads the settings the plan put in o.ConfigFile; waits, with
// the node's own credentials (the kubeconfig the kubelet writes after its
// TLS bootstrap), until the Node has its subnet (flannel: spec.podCIDR;
// ovn-hybrid: the hybrid overlay's annotation), watching that one Node
// rather than polling it (podnetwork_wait.go); and writes each file whose
// content differs. It waits until ctx ends (the service's stop): kube-proxy
// on an overlay cannot start without its source VIP, and the node stays
// NotReady without its CNI configuration, which the operator reports.
//
// With o.WaitOnly it only waits: flanneld's service runs it so, since
// flanneld, started before the kubelet has joined, exits for want of the
// node's credentials and Windows starts it again only after its recovery
// delay (2 s, then 5, then 10).
//
// It takes no lock: it writes only these files, which apply never writes
// (it deletes them only once the service that writes them is stopped or
// gone), and apply waits for nothing it does.
func (a *Agent) PodNetwork(ctx context.Context, o PodNetworkOptions) (*PodNetworkDocument, error) {
	if o.ConfigFile == "" {
		o.ConfigFile = plan.PodNetworkPath
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	settings, err := a.readPodNetwork(o.ConfigFile)
	if err != nil {
		return nil, err
	}
	subnet, err := a.waitForSubnet(ctx, settings, o.PollInterval)
	if err != nil {
		return nil, err
	}
	files, err := settings.Files(subnet)
	if err != nil {
		return nil, plan.Errorf(plan.ErrPlanInvalid, "the pod subnet of Node %s: %v", settings.NodeName, err)
	}
	doc := &PodNetworkDocument{SchemaVersion: plan.SchemaVersion, NodeName: settings.NodeName, PodCIDR: subnet, Files: []plan.FileResult{}}
	if o.WaitOnly {
		return doc, nil
	}
	for _, f := range files {
		action, err := a.writeIfChanged(f)
		if err != nil {
			return doc, err
		}
		doc.Files = append(doc.Files, plan.FileResult{Path: f.HostPath, Action: action})
	}
	a.Log.Info("pod network files written", "node", settings.NodeName, "podCIDR", subnet)
	return doc, nil
}

// readPodNetwork reads and checks the settings file.
func (a *Agent) readPodNetwork(path string) (*plan.PodNetwork, error) {
	local, err := a.localPath(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrFileInstall, File: path, Message: "reading the pod network's settings: " + err.Error()}
	}
	p, err := plan.ParsePodNetwork(data)
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrPlanInvalid, File: path, Message: err.Error()}
	}
	return p, nil
}

// subnetSource says where a Node's pod subnet comes from in a mode.
func subnetSource(mode string) string {
	if mode == plan.NetworkOVNHybrid {
		return "annotation " + plan.HybridOverlaySubnetAnnotation + ", set by OVN-Kubernetes' hybrid overlay controller"
	}
	return "spec.podCIDR, set by kube-controller-manager when it allocates node CIDRs"
}

// writeIfChanged writes a generated file unless it holds that content.
func (a *Agent) writeIfChanged(f plan.GeneratedFile) (plan.FileAction, error) {
	local, err := a.localPath(f.HostPath)
	if err != nil {
		return "", err
	}
	if have, err := os.ReadFile(local); err == nil && bytes.Equal(have, f.Content) {
		return plan.FileUnchanged, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", &plan.Error{Code: plan.ErrFileInstall, File: f.HostPath, Message: "reading: " + err.Error()}
	}
	if err := writeFileAtomic(local, f.Content); err != nil {
		return "", &plan.Error{Code: plan.ErrFileInstall, File: f.HostPath, Message: "writing: " + err.Error()}
	}
	return plan.FileInstalled, nil
}
