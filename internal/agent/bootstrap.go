package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/ignition"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// BootstrapOptions are the inputs of the bootstrapper workflow (the Windows
// Machine Config Bootstrapper's): a worker Ignition config and a kubelet
// binary already on the host.
type BootstrapOptions struct {
	// Ignition is the worker Ignition config's content.
	Ignition []byte
	// KubeletPath is the kubelet binary's Windows path.
	KubeletPath string
	// NodeIP and ClusterDNS (comma-separated IPs) are optional.
	NodeIP     string
	ClusterDNS string
	// InstallDir defaults to C:\k.
	InstallDir string
	// DryRun computes the plan and the files without changing anything.
	DryRun bool
}

// BootstrapDocument is what `winnode-agent bootstrap` prints: the plan it
// applied (or would apply), the files it wrote (or would write; names and
// hashes only, never contents: the kubeconfig holds a token), and the apply
// result (absent in a dry run).
type BootstrapDocument struct {
	SchemaVersion string       `json:"schemaVersion"`
	DryRun        bool         `json:"dryRun"`
	Plan          *plan.Plan   `json:"plan"`
	Files         []plan.File  `json:"files"`
	Result        *plan.Result `json:"result,omitempty"`
}

// Bootstrap turns a worker Ignition config into a plan that runs the kubelet
// as a Windows service, stages the generated files (bootstrap kubeconfig,
// kubelet CA, cloud config, KubeletConfiguration) and applies the plan.
func (a *Agent) Bootstrap(ctx context.Context, o BootstrapOptions) (*BootstrapDocument, error) {
	p, generated, err := a.bootstrapPlan(o)
	if err != nil {
		return nil, err
	}
	doc := &BootstrapDocument{SchemaVersion: plan.SchemaVersion, DryRun: o.DryRun, Plan: p, Files: []plan.File{}}
	for _, g := range generated {
		doc.Files = append(doc.Files, g.file)
	}
	if o.DryRun {
		return doc, nil
	}
	unlock, err := a.lock()
	if err != nil {
		return doc, err
	}
	defer unlock()
	staging, _ := winpath.Parse(p.Staging())
	for _, g := range generated {
		local, err := a.Platform.LocalPath(staging.Join(g.file.SHA256))
		if err == nil {
			if err = os.MkdirAll(filepath.Dir(local), 0o755); err == nil {
				err = writeFileAtomic(local, g.content)
			}
		}
		if err != nil {
			return doc, &plan.Error{Code: plan.ErrFileInstall, File: g.file.Path, Message: fmt.Sprintf("staging the generated file: %v", err)}
		}
	}
	res, err := a.apply(ctx, p)
	res.Command = "bootstrap"
	doc.Result = res
	return doc, err
}

type generatedFile struct {
	file    plan.File
	content []byte
}

func (a *Agent) bootstrapPlan(o BootstrapOptions) (*plan.Plan, []generatedFile, error) {
	bad := func(format string, args ...any) error { return plan.Errorf(plan.ErrUsage, format, args...) }
	if o.InstallDir == "" {
		o.InstallDir = plan.KDir
	}
	dir, err := winpath.Parse(o.InstallDir)
	if err != nil {
		return nil, nil, bad("--install-dir: %v", err)
	}
	kubeletPath, err := winpath.Parse(o.KubeletPath)
	if err != nil {
		return nil, nil, bad("--kubelet-path: %v", err)
	}
	if o.NodeIP != "" && net.ParseIP(o.NodeIP).To4() == nil {
		return nil, nil, bad("--node-ip %q is not an IPv4 address", o.NodeIP)
	}
	var dns []string
	for _, ip := range strings.Split(o.ClusterDNS, ",") {
		if ip = strings.TrimSpace(ip); ip == "" {
			continue
		}
		if net.ParseIP(ip) == nil {
			return nil, nil, bad("--cluster-dns %q is not an IP address", ip)
		}
		dns = append(dns, ip)
	}

	cfg, err := ignition.Parse(o.Ignition)
	if err != nil {
		return nil, nil, &plan.Error{Code: plan.ErrIgnition, Message: err.Error()}
	}
	w, err := cfg.Worker()
	if err != nil {
		return nil, nil, &plan.Error{Code: plan.ErrIgnition, Message: err.Error()}
	}

	// The kubelet binary is already on the host: the plan names it by its
	// current hash, so apply checks it has not changed.
	local, err := a.Platform.LocalPath(kubeletPath)
	if err != nil {
		return nil, nil, &plan.Error{Code: plan.ErrFileMissing, File: kubeletPath.String(), Message: err.Error()}
	}
	kubeletHash, err := hashFile(local)
	fi, statErr := os.Stat(local)
	if err != nil || kubeletHash == "" || statErr != nil {
		return nil, nil, &plan.Error{Code: plan.ErrFileMissing, File: kubeletPath.String(), Message: "the kubelet binary is not there: copy kubelet.exe to the host first"}
	}

	path := func(name string) string { return dir.Join(name).String() }
	logDir := dir.Join("log").String()
	kcfg, err := plan.KubeletConfig(plan.KubeletConfigOptions{ClientCAFile: path("kubelet-ca.crt"), ClusterDNS: dns, Verbosity: w.Verbosity})
	if err != nil {
		return nil, nil, plan.AsError(err, plan.ErrUsage)
	}
	kubeletYAML, err := plan.KubeletConfigYAML(kcfg)
	if err != nil {
		return nil, nil, plan.AsError(err, plan.ErrHost)
	}
	var generated []generatedFile
	add := func(p string, content []byte) {
		sum := sha256.Sum256(content)
		generated = append(generated, generatedFile{file: plan.File{Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}, content: content})
	}
	add(path("bootstrap-kubeconfig"), w.BootstrapKubeconfig)
	add(path("kubelet-ca.crt"), w.KubeletCA)
	add(path("kubelet.yaml"), kubeletYAML)

	args := []string{
		"--windows-service",
		"--config=" + path("kubelet.yaml"),
		"--bootstrap-kubeconfig=" + path("bootstrap-kubeconfig"),
		"--kubeconfig=" + path("kubeconfig"),
		"--cert-dir=" + plan.KubeletCertDir,
		"--register-with-taints=" + plan.WindowsTaint,
		"--logtostderr=false",
		"--log-file=" + logDir + `\kubelet.log`,
	}
	if w.Verbosity > 0 {
		args = append(args, "--v="+strconv.Itoa(w.Verbosity))
	}
	if w.CloudProvider != "" {
		args = append(args, "--cloud-provider="+w.CloudProvider)
	}
	if len(w.CloudConfig) > 0 {
		add(path("cloud.conf"), w.CloudConfig)
		args = append(args, "--cloud-config="+path("cloud.conf"))
	}
	if o.NodeIP != "" {
		args = append(args, "--node-ip="+o.NodeIP)
	}

	p := &plan.Plan{
		SchemaVersion: plan.SchemaVersion,
		Directories: []plan.Directory{
			{Path: dir.String()},
			{Path: plan.KubeletStateDir},
			{Path: logDir, Logs: true},
		},
		Files:        []plan.File{{Path: kubeletPath.String(), SHA256: kubeletHash, Size: fi.Size()}},
		HostServices: []string{plan.ContainerdService},
		Services: []plan.Service{{
			Name:         plan.KubeletService,
			DisplayName:  "Kubernetes kubelet",
			Binary:       kubeletPath.String(),
			Args:         args,
			Dependencies: []string{plan.ContainerdService},
			StartType:    plan.StartAuto,
			Recovery: plan.Recovery{
				Actions: []plan.RecoveryAction{
					{Type: plan.RecoveryRestart, Delay: metav1.Duration{Duration: 2 * time.Second}},
					{Type: plan.RecoveryRestart, Delay: metav1.Duration{Duration: 10 * time.Second}},
				},
				ResetPeriod: metav1.Duration{Duration: 24 * time.Hour},
			},
		}},
		FirewallPorts: []plan.FirewallPort{{Name: "kubelet", Protocol: plan.TCP, Port: 10250}},
		Checks:        []plan.Check{{Type: plan.CheckServiceRunning, Service: plan.KubeletService}},
	}
	for _, g := range generated {
		p.Files = append(p.Files, g.file)
		p.Services[0].Uses = append(p.Services[0].Uses, g.file.Path)
	}
	body, _ := json.Marshal(p)
	sum := sha256.Sum256(body)
	p.Version = "bootstrap-" + hex.EncodeToString(sum[:])[:12]
	if err := p.Validate(); err != nil {
		return nil, nil, plan.AsError(err, plan.ErrUsage)
	}
	return p, generated, nil
}
