package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// applyPlan renders the host's plan and applies it: the kubelet (which
// joins with the bootstrap token), and in flannel mode flanneld, which
// waits for the Node's subnet, and kube-proxy, whose service writes what
// depends on the subnet before kube-proxy starts.
func (r *joinRun) applyPlan(ctx context.Context) error {
	if err := r.refuseForeignContainerd(ctx); err != nil {
		return err
	}
	kc, err := r.cfg.BootstrapKubeconfig()
	if err != nil {
		return plan.AsError(err, plan.ErrJoinConfig)
	}
	r.bootstrapKubeconfig = kc
	return r.renderAndApply(ctx)
}

// refuseForeignContainerd stops the join on a host that runs a containerd
// winnode did not install: the plan installs winnode's own (renderInput),
// and would otherwise take over that service, as the operator refuses to
// under containerRuntime Managed (internal/configure, runtime.go).
func (r *joinRun) refuseForeignContainerd(ctx context.Context) error {
	cfg, _, err := r.a.Platform.Query(ctx, ContainerdService)
	switch {
	case errors.Is(err, ErrServiceNotFound):
		return nil
	case err != nil:
		return &plan.Error{Code: plan.ErrService, Service: ContainerdService, Message: err.Error()}
	case cfg.Description == plan.ServiceDescription:
		return nil // winnode's own, from an earlier join
	}
	return &plan.Error{Code: plan.ErrService, Service: ContainerdService, Message: fmt.Sprintf(
		"the image runs a containerd winnode did not install (%s): join installs its own from the image's payload; "+
			"build the image without it (containerd.exe --unregister-service)", cfg.BinaryPathName)}
}

// renderAndApply renders the plan, stages the files it generates and
// applies it.
func (r *joinRun) renderAndApply(ctx context.Context) error {
	log := r.log("plan")
	rendered, err := plan.Render(r.renderInput())
	if err != nil {
		return plan.AsError(err, plan.ErrPlanInvalid)
	}
	files := []generatedFile{{file: plan.File{Path: plan.BootstrapKubeconfigPath}, content: r.bootstrapKubeconfig}}
	for _, g := range rendered.Generated {
		files = append(files, generatedFile{file: plan.File{Path: g.HostPath}, content: g.Content})
	}
	if err := r.a.stage(rendered.Plan.Staging(), files); err != nil {
		return err
	}
	log.Info("applying the plan", "plan", rendered.Plan.Version, "services", len(rendered.Plan.Services))
	res, err := r.a.Apply(ctx, rendered.Plan)
	r.doc.Results = append(r.doc.Results, res)
	if err != nil {
		return err
	}
	for _, s := range res.Services {
		log.Info("service", "name", s.Name, "action", s.Action, "restarted", s.Restarted, "state", s.State)
	}
	r.doc.PlanVersion = rendered.Plan.Version
	return nil
}

// renderInput is the renderer's input on this host: the cluster and
// network of the join config, this host's facts, the image's payload, a
// managed containerd and the operator's version (the plan's version names
// it, as in Push mode).
func (r *joinRun) renderInput() plan.RenderInput {
	c := r.cfg.Cluster
	f := r.facts
	return plan.RenderInput{
		Cluster: plan.ClusterFacts{Server: c.Server, CAData: c.CAData, ClusterDNS: c.ClusterDNS, ClusterDomain: c.ClusterDomain,
			CloudProvider: c.CloudProvider, BootstrapKubeconfig: plan.DigestOf(r.bootstrapKubeconfig)},
		Host: plan.HostFacts{Info: &plan.Info{SchemaVersion: plan.SchemaVersion, Hostname: f.Hostname, FQDN: f.FQDN, IPv4: f.IPv4,
			DefaultIPv4: f.DefaultIPv4, OS: plan.OSInfo{ProductName: f.ProductName, Build: f.Build}, AgentVersion: r.a.Version}},
		Payload: r.manifest,
		Network: r.cfg.Network.Facts(""),
		// winnode's own containerd, from the image: the payload the image
		// carries has containerd.exe and its shim, so a stock Windows
		// Server image needs no container runtime of its own (a host runs
		// none before winnode installs one). The Containers feature must be
		// enabled when the image is built: join cannot restart the host
		// halfway, and stops with RebootRequired naming the feature when it
		// is not. There are no registries, proxy or CA facts to add: the
		// join config carries none (docs/cluster-api.md).
		Runtime:         plan.RuntimeFacts{Mode: plan.RuntimeManaged},
		OperatorVersion: r.cfg.OperatorVersion,
		Metrics:         r.metrics(),
	}
}

// metrics are the node metrics of a Pull host: windows_exporter, from the
// image, serving with the kubelet's own serving certificate (signed by the
// workload cluster's CA once winnode's approver checked it, renewed by the
// kubelet), since no operator reaches the host to give it one and the
// bootstrap data carries no key. An image without windows_exporter.exe
// (baked from a payload before it had one) serves no metrics, which the
// log says.
func (r *joinRun) metrics() *plan.MetricsFacts {
	if _, ok := r.manifest.Lookup(plan.PayloadWindowsExporter); !ok {
		r.log("plan").Info("no node metrics: the image's payload has no " + plan.PayloadWindowsExporter)
		return nil
	}
	return &plan.MetricsFacts{KubeletServing: true}
}

// stage writes files into the staging folder as blobs named by the sha256
// of their content, where apply takes them from (the operator uploads them
// there in Push mode); each file's SHA256 and Size are set from content.
func (a *Agent) stage(stagingDir string, files []generatedFile) error {
	staging, err := winpath.Parse(stagingDir)
	if err != nil {
		return plan.AsError(err, plan.ErrPlanInvalid)
	}
	for i := range files {
		g := &files[i]
		g.file.SHA256, g.file.Size = plan.DigestOf(g.content).SHA256, int64(len(g.content))
		local, err := a.Platform.LocalPath(staging.Join(g.file.SHA256))
		if err == nil {
			if err = os.MkdirAll(filepath.Dir(local), 0o755); err == nil {
				err = writeFileAtomic(local, g.content)
			}
		}
		if err != nil {
			return &plan.Error{Code: plan.ErrFileInstall, File: g.file.Path, Message: "staging the generated file: " + err.Error()}
		}
	}
	return nil
}
