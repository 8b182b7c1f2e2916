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
	"github.com/winnode/winnode/internal/logrotate"
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
	// WrapperFile is the local file of winnode-service.exe, the kubelet
	// service's program; default: beside this program, where the payload
	// puts it.
	WrapperFile string
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
	if err := a.stage(p.Staging(), generated); err != nil {
		return doc, err
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

// bootstrapPlan turns the options and the worker Ignition config into a
// one-service plan (the kubelet, depending on containerd) and the files it
// generates. Bad options are Usage errors, a bad config an Ignition error.
func (a *Agent) bootstrapPlan(o BootstrapOptions) (*plan.Plan, []generatedFile, error) {
	in, err := checkBootstrapOptions(o)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ignition.Parse(o.Ignition)
	if err != nil {
		return nil, nil, &plan.Error{Code: plan.ErrIgnition, Message: err.Error()}
	}
	w, err := cfg.Worker()
	if err != nil {
		return nil, nil, &plan.Error{Code: plan.ErrIgnition, Message: err.Error()}
	}
	kubelet, err := a.kubeletBinary(in.kubeletPath)
	if err != nil {
		return nil, nil, err
	}
	generated, err := in.generateFiles(w)
	if err != nil {
		return nil, nil, err
	}
	wrapper, err := in.wrapperFile(o.WrapperFile)
	if err != nil {
		return nil, nil, err
	}
	p := in.plan(kubelet, wrapper.file, in.kubeletArgs(w), generated)
	generated = append(generated, wrapper)
	body, _ := json.Marshal(p)
	sum := sha256.Sum256(body)
	p.Version = "bootstrap-" + hex.EncodeToString(sum[:])[:12]
	if err := p.Validate(); err != nil {
		return nil, nil, plan.AsError(err, plan.ErrUsage)
	}
	return p, generated, nil
}

// bootstrapInputs are BootstrapOptions checked and parsed.
type bootstrapInputs struct {
	dir         winpath.Path // the install folder
	kubeletPath winpath.Path
	nodeIP      string
	dns         []string
}

// checkBootstrapOptions parses the options, with Usage errors naming the
// command-line flag at fault.
func checkBootstrapOptions(o BootstrapOptions) (bootstrapInputs, error) {
	bad := func(format string, args ...any) error { return plan.Errorf(plan.ErrUsage, format, args...) }
	in := bootstrapInputs{nodeIP: o.NodeIP}
	if o.InstallDir == "" {
		o.InstallDir = plan.KDir
	}
	var err error
	if in.dir, err = winpath.Parse(o.InstallDir); err != nil {
		return in, bad("--install-dir: %v", err)
	}
	if in.kubeletPath, err = winpath.Parse(o.KubeletPath); err != nil {
		return in, bad("--kubelet-path: %v", err)
	}
	if o.NodeIP != "" && net.ParseIP(o.NodeIP).To4() == nil {
		return in, bad("--node-ip %q is not an IPv4 address", o.NodeIP)
	}
	for _, ip := range strings.Split(o.ClusterDNS, ",") {
		if ip = strings.TrimSpace(ip); ip == "" {
			continue
		}
		if net.ParseIP(ip) == nil {
			return in, bad("--cluster-dns %q is not an IP address", ip)
		}
		in.dns = append(in.dns, ip)
	}
	return in, nil
}

// kubeletBinary is the plan file of the kubelet binary, already on the
// host: the plan names it by its current hash, so apply checks it has not
// changed.
func (a *Agent) kubeletBinary(kubeletPath winpath.Path) (plan.File, error) {
	local, err := a.Platform.LocalPath(kubeletPath)
	if err != nil {
		return plan.File{}, &plan.Error{Code: plan.ErrFileMissing, File: kubeletPath.String(), Message: err.Error()}
	}
	kubeletHash, err := hashFile(local)
	fi, statErr := os.Stat(local)
	if err != nil || kubeletHash == "" || statErr != nil {
		return plan.File{}, &plan.Error{Code: plan.ErrFileMissing, File: kubeletPath.String(), Message: "the kubelet binary is not there: copy kubelet.exe to the host first"}
	}
	return plan.File{Path: kubeletPath.String(), SHA256: kubeletHash, Size: fi.Size()}, nil
}

// wrapperFile is winnode-service.exe, the kubelet service's binary
// (plan/wrapped.go), as a file of the plan in the install folder, read
// from beside this program (the payload carries both). Its content is
// staged with the generated files, so that apply puts it there when the
// agent runs from elsewhere, and finds it in place when it runs from there.
func (in bootstrapInputs) wrapperFile(local string) (generatedFile, error) {
	var err error
	if local == "" {
		if local, err = os.Executable(); err == nil {
			local = filepath.Join(filepath.Dir(local), plan.PayloadService)
		}
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(local)
	}
	if err != nil {
		return generatedFile{}, &plan.Error{Code: plan.ErrFileMissing, File: plan.PayloadService,
			Message: fmt.Sprintf("reading %s, the kubelet service's program, from beside winnode-agent.exe: %v (copy it there from the payload)", plan.PayloadService, err)}
	}
	sum := sha256.Sum256(data)
	return generatedFile{file: plan.File{Path: in.path(plan.PayloadService), SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}, content: data}, nil
}

// path is a file of the install folder.
func (in bootstrapInputs) path(name string) string { return in.dir.Join(name).String() }

// logDir is where the kubelet logs.
func (in bootstrapInputs) logDir() string { return in.dir.Join("log").String() }

// generateFiles makes the files the kubelet reads: the bootstrap
// kubeconfig, the kubelet CA and the KubeletConfiguration. The Ignition
// config's cloud config is not one of them: the kubelet of Kubernetes v1.37
// has no --cloud-config (an external cloud provider's controller reads its
// own).
func (in bootstrapInputs) generateFiles(w *ignition.Worker) ([]generatedFile, error) {
	kcfg, err := plan.KubeletConfig(plan.KubeletConfigOptions{ClientCAFile: in.path("kubelet-ca.crt"), ClusterDNS: in.dns, Verbosity: w.Verbosity})
	if err != nil {
		return nil, plan.AsError(err, plan.ErrUsage)
	}
	kubeletYAML, err := plan.KubeletConfigYAML(kcfg)
	if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	var generated []generatedFile
	add := func(p string, content []byte) {
		sum := sha256.Sum256(content)
		generated = append(generated, generatedFile{file: plan.File{Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}, content: content})
	}
	add(in.path("bootstrap-kubeconfig"), w.BootstrapKubeconfig)
	add(in.path("kubelet-ca.crt"), w.KubeletCA)
	add(in.path("kubelet.yaml"), kubeletYAML)
	return generated, nil
}

// kubeletArgs are the kubelet's arguments (after its program); the
// service runs it through winnode-service.exe, which answers the service
// control manager and writes the kubelet's output to
// <install-dir>\log\kubelet.log, rotated at the default limits
// (plan/wrapped.go says why).
func (in bootstrapInputs) kubeletArgs(w *ignition.Worker) []string {
	args := []string{
		"--config=" + in.path("kubelet.yaml"),
		"--bootstrap-kubeconfig=" + in.path("bootstrap-kubeconfig"),
		"--kubeconfig=" + in.path("kubeconfig"),
		"--cert-dir=" + plan.KubeletCertDir,
		"--register-with-taints=" + plan.WindowsTaint,
	}
	if w.Verbosity > 0 {
		args = append(args, "--v="+strconv.Itoa(w.Verbosity))
	}
	if w.CloudProvider != "" {
		args = append(args, "--cloud-provider="+w.CloudProvider)
	}
	if in.nodeIP != "" {
		args = append(args, "--node-ip="+in.nodeIP)
	}
	return args
}

// plan is the bootstrap plan, without its version: the kubelet binary,
// winnode-service.exe and the generated files, the kubelet service using
// them (winnode-service.exe running the kubelet), its port and check.
func (in bootstrapInputs) plan(kubelet, wrapper plan.File, args []string, generated []generatedFile) *plan.Plan {
	p := &plan.Plan{
		SchemaVersion: plan.SchemaVersion,
		Directories: []plan.Directory{
			{Path: in.dir.String()},
			{Path: plan.KubeletStateDir},
			{Path: in.logDir(), Logs: true},
		},
		Files:        []plan.File{kubelet, wrapper},
		HostServices: []string{plan.ContainerdService},
		Services: []plan.Service{{
			Name:         plan.KubeletService,
			DisplayName:  "Kubernetes kubelet",
			Binary:       wrapper.Path,
			Args:         plan.ServiceArgs(plan.KubeletService, in.logDir()+`\kubelet.log`, logrotate.Defaults, kubelet.Path, args...),
			Uses:         []string{kubelet.Path},
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
	return p
}
