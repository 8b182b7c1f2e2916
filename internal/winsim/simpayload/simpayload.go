// Package simpayload assembles a *simulated* payload folder: a payload
// folder (internal/payload) whose files are Linux builds standing in for the
// Windows programs, for simulated (winsim) hosts only. The agent's and
// winnode-service's Linux builds are winnode-agent.exe and
// winnode-service.exe; the multi-call cmd/winsim-standin is kubelet.exe,
// kube-proxy.exe, flanneld.exe, csi-proxy.exe, containerd.exe and
// windows_exporter.exe. Nothing in such a folder
// runs on Windows.
//
// The end-to-end tests and `winnodectl demo` both use it, so what the demo
// shows is what the tests check.
package simpayload

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/payload"
)

// Host paths of the simulated payload's files.
const (
	AgentHostPath    = `C:\k\winnode-agent.exe`
	ServiceHostPath  = `C:\k\winnode-service.exe`
	CSIProxyHostPath = `C:\k\csi-proxy.exe`
	// WindowsExporterHostPath is where the real payload puts
	// windows_exporter.exe.
	WindowsExporterHostPath = `C:\k\windows_exporter.exe`
	KubeletHostPath         = `C:\k\kubelet.exe`
	KubeProxyHostPath       = `C:\k\kube-proxy.exe`
	FlanneldHostPath        = `C:\k\flanneld.exe`
	// HybridOverlayHostPath is where hybrid-overlay-node.exe goes, as the
	// Windows Machine Config Operator installs it.
	HybridOverlayHostPath = `C:\k\hybrid-overlay-node.exe`
	HostLocalHostPath     = `C:\k\cni\bin\host-local.exe`
	// ContainerdHostPath and ContainerdShimHostPath are where the real
	// payload puts containerd and its Windows shim (plan.ContainerdDir).
	ContainerdHostPath     = `C:\k\containerd\containerd.exe`
	ContainerdShimHostPath = `C:\k\containerd\containerd-shim-runhcs-v1.exe`
	// ContainerdFault is what ends a containerd.exe of Options.ContainerdFails:
	// the stand-in containerd finds it in its own file and refuses to start.
	ContainerdFault = "\nwinnode simulated fault: containerd fails to start\n"
	PaddingHostPath = `C:\k\payload-padding.bin`
	PaddingName     = "payload-padding.bin"
	// CarriedHostDir is where the files of Options.Carry are placed.
	CarriedHostDir = `C:\k\carried`
	// CarriedPrefix starts the manifest names of the carried files.
	CarriedPrefix = "carried-"
)

// Options says what to put in the folder.
type Options struct {
	// AgentBinary is the Linux build of cmd/winnode-agent, ServiceBinary
	// of cmd/winnode-service, StandinBinary of cmd/winsim-standin
	// (testenv.Binary or testenv.BuildBinary build them).
	AgentBinary, ServiceBinary, StandinBinary string
	// HostLocalBinary, when set, is the Linux build of the CNI host-local
	// IPAM plugin (testenv.HostLocal), installed as
	// C:\k\cni\bin\host-local.exe as the real payload installs its
	// Windows build: the stand-in containerd runs it to give pods their
	// addresses. Without it pods get none and stay Pending.
	HostLocalBinary string
	// HybridOverlay adds the stand-in as hybrid-overlay-node.exe, as the
	// real payload has it only when its build was given the program as an
	// input file (hack/payload, HYBRID_OVERLAY_NODE): without it,
	// --network ovn-hybrid is refused.
	HybridOverlay bool
	// Version is recorded as the stand-ins' version (default "simulated").
	Version string
	// AgentVersion is recorded as the agent's version: what the agent build
	// reports in its info (default "dev", an unstamped build's version).
	AgentVersion string
	// PaddingBytes, when > 0, adds payload-padding.bin of that size, so that
	// a benchmark moves as many bytes as a real payload (about 250 MB).
	// PaddingSeed varies its content (and so its hash): a different seed is
	// a different payload, which is how tests simulate an upgrade.
	PaddingBytes int64
	PaddingSeed  string
	// Build, when set, is appended to the stand-in kubelet.exe and
	// kube-proxy.exe (a Linux executable runs the same with bytes after its
	// end), so that their hashes change as a new Kubernetes release's do:
	// tests use it for upgrades that restart services.
	Build string
	// AgentBuild, when set, is appended to winnode-agent.exe alone: a new
	// agent and nothing else, as an agent-only release is.
	AgentBuild string
	// ContainerdBuild, when set, is appended to the stand-in
	// containerd.exe and its shim, as Build is to the kubelet: a payload
	// with a new containerd. ContainerdFails appends ContainerdFault: a
	// new containerd that fails to start (the rollback of upgrades).
	ContainerdBuild string
	ContainerdFails bool
	// Carry, when set, is a real payload folder (`make payload`): each of
	// its files is added as it is, named carried-<name> and placed in
	// C:\k\carried, where nothing runs it. A benchmark so moves the bytes
	// of the real Windows programs, which compress as real binaries do,
	// while the simulated host runs the stand-ins.
	Carry string
	// Cache, when set, is a folder of compressed copies that Builds share,
	// of this process and of others: each content is compressed once
	// (cache.go). Tests take testenv.PayloadCache.
	Cache string
}

// Build writes the simulated payload into dir (created if missing; files
// there are replaced) and returns its manifest, as payload.Load reads it.
func Build(dir string, o Options) (*payload.Manifest, error) {
	if o.AgentBinary == "" || o.ServiceBinary == "" || o.StandinBinary == "" {
		return nil, errors.New("simulated payload: the agent's, winnode-service's and the stand-in's Linux builds are required")
	}
	if o.Version == "" {
		o.Version = "simulated"
	}
	if o.AgentVersion == "" {
		o.AgentVersion = "dev"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simulated payload: %w", err)
	}
	files := []payload.File{
		{Name: "winnode-agent.exe", HostPath: AgentHostPath, Version: o.AgentVersion},
		{Name: "kubelet.exe", HostPath: KubeletHostPath, Version: o.Version},
		{Name: "kube-proxy.exe", HostPath: KubeProxyHostPath, Version: o.Version},
		{Name: "flanneld.exe", HostPath: FlanneldHostPath, Version: o.Version},
		// Built from the same tree as the agent, but with no version in
		// its bytes: they change only with its code.
		{Name: "winnode-service.exe", HostPath: ServiceHostPath, Version: o.AgentVersion},
		{Name: "csi-proxy.exe", HostPath: CSIProxyHostPath, Version: o.Version},
		// containerd's shim is never run on a simulated host (the stand-in
		// containerd runs no container); the stand-in takes its place,
		// and would refuse to run under its name.
		{Name: "containerd.exe", HostPath: ContainerdHostPath, Version: o.Version},
		{Name: "containerd-shim-runhcs-v1.exe", HostPath: ContainerdShimHostPath, Version: o.Version},
		{Name: "windows_exporter.exe", HostPath: WindowsExporterHostPath, Version: o.Version},
	}
	sources := []string{o.AgentBinary, o.StandinBinary, o.StandinBinary, o.StandinBinary, o.ServiceBinary, o.StandinBinary, o.StandinBinary, o.StandinBinary, o.StandinBinary}
	if o.HybridOverlay {
		files = append(files, payload.File{Name: "hybrid-overlay-node.exe", HostPath: HybridOverlayHostPath, Version: o.Version})
		sources = append(sources, o.StandinBinary)
	}
	if o.HostLocalBinary != "" {
		files = append(files, payload.File{Name: "host-local.exe", HostPath: HostLocalHostPath, Version: o.Version})
		sources = append(sources, o.HostLocalBinary)
	}
	for i, f := range files {
		trailer := o.trailer(f.Name)
		if err := copyFile(sources[i], filepath.Join(dir, f.Name), trailer); err != nil {
			return nil, fmt.Errorf("simulated payload: %s from %s: %w", f.Name, sources[i], err)
		}
	}
	pad := filepath.Join(dir, PaddingName)
	if o.PaddingBytes > 0 {
		if err := writePadding(pad, o.PaddingBytes, o.PaddingSeed); err != nil {
			return nil, fmt.Errorf("simulated payload: %s: %w", PaddingName, err)
		}
		files = append(files, payload.File{Name: PaddingName, HostPath: PaddingHostPath, Version: o.Version})
	} else if err := os.Remove(pad); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("simulated payload: %w", err)
	}
	if o.Carry != "" {
		carried, err := carry(dir, o.Carry)
		if err != nil {
			return nil, fmt.Errorf("simulated payload: carrying the real payload %s: %w", o.Carry, err)
		}
		files = append(files, carried...)
	}
	return write(dir, files, o.Cache)
}

// write writes the folder's manifest (payload.Write), with the compressed
// copies of cache when it is set (cache.go).
func write(dir string, files []payload.File, cache string) (*payload.Manifest, error) {
	if cache != "" {
		if err := seedFromCache(dir, cache, files); err != nil {
			return nil, fmt.Errorf("simulated payload: from the cache %s: %w", cache, err)
		}
	}
	if err := payload.Write(dir, files); err != nil {
		return nil, fmt.Errorf("simulated payload: %w", err)
	}
	m, err := payload.Load(dir)
	if err != nil || cache == "" {
		return m, err
	}
	if err := storeInCache(dir, cache, m); err != nil {
		return nil, fmt.Errorf("simulated payload: into the cache %s: %w", cache, err)
	}
	return m, nil
}

// trailer is what goes after a stand-in's bytes: its build, and the
// fault of a containerd that fails.
func (o Options) trailer(name string) []byte {
	var t string
	switch name {
	case "kubelet.exe", "kube-proxy.exe":
		if o.Build != "" {
			t = "\nwinnode simulated build " + o.Build + "\n"
		}
	case "winnode-agent.exe":
		if o.AgentBuild != "" {
			t = "\nwinnode simulated agent build " + o.AgentBuild + "\n"
		}
	case "containerd.exe", "containerd-shim-runhcs-v1.exe":
		if o.ContainerdBuild != "" {
			t = "\nwinnode simulated build " + o.ContainerdBuild + "\n"
		}
		if o.ContainerdFails && name == "containerd.exe" {
			t += ContainerdFault
		}
	}
	return []byte(t)
}

// carry copies every file of the real payload in src into dir, as
// carried-<name>.
func carry(dir, src string) ([]payload.File, error) {
	real, err := payload.Load(src)
	if err != nil {
		return nil, err
	}
	var files []payload.File
	for _, f := range real.Files {
		name := CarriedPrefix + f.Name
		if err := copyFile(filepath.Join(src, f.Name), filepath.Join(dir, name), nil); err != nil {
			return nil, err
		}
		files = append(files, payload.File{Name: name, HostPath: CarriedHostDir + `\` + f.Name, Version: f.Version})
	}
	return files, nil
}

// copyFile copies src to dst, with trailer after its content.
func copyFile(src, dst string, trailer []byte) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	// A temporary name of its own: Builds of other processes may write the
	// same file of a shared cache (cache.go).
	out, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := out.Name()
	if err := out.Chmod(0o755); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	_, cerr := io.Copy(out, in)
	if cerr == nil {
		_, cerr = out.Write(trailer)
	}
	if err := errors.Join(cerr, out.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// writePadding writes n bytes that do not compress (a sha256 chain from the
// seed), so no layer of the link can make them cheaper than real binaries.
func writePadding(path string, n int64, seed string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	block := sha256.Sum256([]byte("winnode simulated payload padding " + seed))
	buf := make([]byte, 0, 1<<20)
	var werr error
	for written := int64(0); written < n && werr == nil; {
		buf = buf[:0]
		for len(buf) < cap(buf) {
			block = sha256.Sum256(block[:])
			buf = append(buf, block[:]...)
		}
		chunk := min(int64(len(buf)), n-written)
		_, werr = f.Write(buf[:chunk])
		written += chunk
	}
	return errors.Join(werr, f.Close())
}
