package configure

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/plan"
)

// planHostPath is the host path the plan JSON is named by when it is
// uploaded; like every upload it lands in the staging folder as
// <staging>\<sha256>, which is the path given to `winnode-agent apply --plan`.
const planHostPath = `C:\k\plan.json`

// render makes the host's plan (step "plan"), with the pod network of its
// mode (network.go); node is the host's Node, nil before it registered.
func (c *Configurer) render(ctx context.Context, inst *winnodev1.WindowsInstance, info *plan.Info, cr *credentials, node *corev1.Node) (*plan.Rendered, error) {
	network, why, err := c.networkFacts(ctx, node)
	if err != nil {
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonNetworkUnsupported, err.Error())
		return nil, networkUnsupported(inst, err)
	}
	rt, err := c.runtimeFacts(ctx, inst)
	if err != nil {
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonApplyFailed, err.Error())
		return nil, stepErr(StepPlan, winnodev1.ReasonApplyFailed, fmt.Errorf("the container runtime's configuration: %w", err))
	}
	metrics, key, err := c.metricsFacts(ctx, inst, info)
	if err != nil {
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonApplyFailed, err.Error())
		return nil, stepErr(StepPlan, winnodev1.ReasonApplyFailed, err)
	}
	cr.metricsKey = key
	r, err := plan.Render(plan.RenderInput{
		Cluster:         cr.cluster,
		Host:            plan.HostFacts{Info: info, Address: inst.Spec.Address, ProviderID: inst.Spec.ProviderID},
		Payload:         c.Payload,
		Network:         network,
		Runtime:         rt.runtime,
		Proxy:           rt.proxy,
		TrustedCA:       rt.trustedCA,
		OperatorVersion: c.Version,
		Logs:            c.Logs,
		Metrics:         metrics,
	})
	if err != nil {
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonApplyFailed, err.Error())
		return nil, stepErr(StepPlan, winnodev1.ReasonApplyFailed, err)
	}
	c.recordNetwork(inst, network, why)
	return r, nil
}

// upToDate says whether the host already runs exactly this plan: the same
// version (which names the content), applied completely, with every file
// in place.
func upToDate(info *plan.Info, r *plan.Rendered) bool {
	ip := info.InstalledPlan
	if ip == nil || !ip.Complete || ip.Version != r.Plan.Version {
		return false
	}
	for _, f := range r.Plan.Files {
		if sum, ok := lookupFold(ip.Files, f.Path); !ok || sum != f.SHA256 {
			return false
		}
	}
	return true
}

// sync uploads what the host lacks (payload files, compressed where the
// payload has a compressed copy; generated files, the bootstrap kubeconfig,
// the plan itself) to its staging folder, by hash, through the agent's
// receive (host.SyncPipelined).
// It returns the staged path of the plan.
func (c *Configurer) sync(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client, h *hostState) (string, error) {
	info, cr, r := h.info, h.creds, h.rendered
	var files []host.LocalFile
	for _, f := range c.Payload.Files {
		lf := host.LocalFile{LocalPath: filepath.Join(c.PayloadDir, f.Name), HostPath: f.HostPath, SHA256: f.SHA256, Size: f.Size}
		if name := f.EncodedName(); name != "" {
			// The plan names the same encoded blob (plan.Render): the
			// compressed copy made when the payload was built travels.
			lf.Encoded = &host.Encoded{LocalPath: filepath.Join(c.PayloadDir, name), SHA256: f.EncodedSHA256, Size: f.EncodedSize}
		}
		files = append(files, lf)
	}
	add := func(hostPath string, content []byte) {
		d := plan.DigestOf(content)
		files = append(files, host.LocalFile{Content: content, HostPath: hostPath, SHA256: d.SHA256, Size: d.Size})
	}
	for _, g := range r.Generated {
		add(g.HostPath, g.Content)
	}
	if cr.bootstrap != nil {
		add(plan.BootstrapKubeconfigPath, cr.bootstrap)
	}
	if cr.metricsKey != nil {
		add(plan.WindowsExporterKeyPath, cr.metricsKey)
	}
	add(planHostPath, r.JSON)
	stagedPlan, err := host.StagedPath(r.Plan.Staging(), plan.DigestOf(r.JSON).SHA256)
	if err != nil {
		return "", stepErr(StepSync, winnodev1.ReasonSyncFailed, err)
	}

	installed := map[string]string{}
	if info.InstalledPlan != nil {
		maps.Copy(installed, info.InstalledPlan.Files)
	}
	agent, err := c.agentFile()
	if err != nil {
		return "", stepErr(StepSync, winnodev1.ReasonSyncFailed, err)
	}
	if h.agentInstalled {
		// Step info just put the payload's agent in place (Install checks
		// what it sent against the payload's hash): staging it again would
		// send it twice.
		installed[agent.HostPath] = agent.SHA256
	}
	ctx, cancel := context.WithTimeout(ctx, c.syncTimeout())
	defer cancel()
	var progress func(host.Progress)
	if c.Progress != nil {
		progress = func(p host.Progress) { c.Progress(inst, p) }
	}
	// The blobs travel on the standard input of the agent that step info
	// ran (the payload's): it decodes and hashes them as they arrive.
	res, err := cl.SyncPipelined(ctx, agent.HostPath, files, installed, r.Plan.Staging(), progress)
	c.countUpload(res.BytesUploaded)
	if err != nil {
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, reasonOf(err, winnodev1.ReasonSyncFailed), err.Error())
		return "", stepErr(StepSync, reasonOf(err, winnodev1.ReasonSyncFailed), err)
	}
	c.Log.Info("synced the payload", "instance", inst.Name, "bytes", res.BytesUploaded, "files", res.FilesUploaded, "skipped", res.FilesSkipped)
	return stagedPlan, nil
}
