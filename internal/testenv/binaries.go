package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

const modulePath = "github.com/winnode/winnode"

// EnvBinDir names the environment variable that points at a folder holding
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler (the
// Makefile sets it).
// Without it the environment runs hack/tools/build-control-plane.sh, which
// builds them once and caches them.
const EnvBinDir = "WINNODE_K8S_BIN"

var controlPlaneBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// RepoRoot finds the winnode source tree: from the working directory upwards,
// then from where this file was compiled.
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			data, err := os.ReadFile(filepath.Join(d, "go.mod"))
			if err == nil && bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("cannot find the winnode source tree (go.mod of %s) above %v; set %s to a folder with %s",
		modulePath, starts, EnvBinDir, strings.Join(controlPlaneBinaries, ", "))
}

// controlPlaneBinDir returns the folder with the control-plane binaries,
// building them if needed.
func controlPlaneBinDir() (string, error) {
	for _, env := range []string{EnvBinDir, "KUBEBUILDER_ASSETS"} {
		if dir := os.Getenv(env); dir != "" && hasAll(dir) {
			return dir, nil
		}
	}
	dir, err := runScript("hack/tools/build-control-plane.sh", "building the control plane")
	if err != nil {
		return "", err
	}
	if !hasAll(dir) {
		return "", fmt.Errorf("hack/tools/build-control-plane.sh printed %q, which lacks %v", dir, controlPlaneBinaries)
	}
	return dir, nil
}

// runScript runs script, a bash script of the source tree, from the tree's
// root, its log on stderr, and returns the last line of its output: the
// build scripts print what they made there. doing says what the script
// does, for an error.
func runScript(script, doing string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(root, script))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s with %s: %w", doing, script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

func hasAll(dir string) bool {
	for _, b := range controlPlaneBinaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

var binaries struct {
	sync.Mutex
	dir   string
	paths map[string]string
}

// Binary builds one of the project's programs for this machine, once per test
// binary, and returns its path: pkg is relative to the module, like
// "cmd/winnode-agent". Tests use it to put the project's Linux builds on
// simulated hosts. The Go build cache makes repeated builds cheap.
func Binary(t TB, pkg string) string {
	t.Helper()
	path, err := BuildBinary(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// HostLocal builds the Linux build of the CNI plugins' host-local IPAM
// plugin, at the version the payload pins (hack/payload/cni): on simulated
// hosts it hands out pod addresses as its Windows build does on Windows.
func HostLocal() (string, error) {
	return BuildBinary("hack/payload/cni:github.com/containernetworking/plugins/plugins/ipam/host-local")
}

// BuildBinary is Binary for callers outside tests (the demo). pkg is a
// package of this module ("cmd/winnode-agent"), or "DIR:PACKAGE" for a
// package of the tools module in DIR (hack/payload/cni).
func BuildBinary(pkg string) (string, error) {
	return buildBinary(pkg, "")
}

// BuildVersioned is BuildBinary of a program of this module stamped with
// version, as a release build stamps it (-ldflags "-X main.version=..."):
// the demo's agent carries the demo's operator's version, which that
// operator checks in Cluster API's Pull mode (joinconfig.SupportedAgents);
// an unstamped agent is "dev".
func BuildVersioned(pkg, version string) (string, error) {
	return buildBinary(pkg, version)
}

// buildBinary builds pkg, stamped with version unless empty, once per
// process and version.
func buildBinary(pkg, version string) (string, error) {
	binaries.Lock()
	defer binaries.Unlock()
	key := pkg
	if version != "" {
		key += "@" + version
	}
	if p, ok := binaries.paths[key]; ok {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	if err := makeBinDir(); err != nil {
		return "", err
	}
	out := filepath.Join(binaries.dir, filepath.Base(pkg))
	args := []string{"build", "-o", out}
	if version != "" {
		// A folder per version: the program keeps its name.
		dir := filepath.Join(binaries.dir, "version-"+strings.ReplaceAll(version, "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		out = filepath.Join(dir, filepath.Base(pkg))
		args = []string{"build", "-o", out, "-ldflags", "-X main.version=" + version}
	}
	cmd := exec.Command("go", append(args, "./"+strings.TrimPrefix(pkg, "./"))...)
	cmd.Dir = root
	if dir, toolPkg, ok := strings.Cut(pkg, ":"); ok {
		cmd = exec.Command("go", append(args, toolPkg)...)
		cmd.Dir = filepath.Join(root, dir)
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", key, err, msg)
	}
	binaries.paths[key] = out
	return out, nil
}

// RemoveBuiltBinaries deletes what BuildBinary built. Main calls it after
// the tests; the demo calls it when it stops.
func RemoveBuiltBinaries() {
	binaries.Lock()
	defer binaries.Unlock()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
		binaries.dir, binaries.paths = "", nil
	}
}

// PayloadCacheEnv names the folder of compressed payload copies that every
// test process of a run shares (hack/test.sh makes one per make test).
const PayloadCacheEnv = "WINNODE_SIMPAYLOAD_CACHE"

// PayloadCache is the folder for simpayload.Options.Cache: $PayloadCacheEnv
// when set, else a folder of this test binary's, removed with its built
// binaries. Compressing a simulated payload costs a minute under the race
// detector; with the cache, each content is compressed once per run.
func PayloadCache(t TB) string {
	t.Helper()
	if dir := os.Getenv(PayloadCacheEnv); dir != "" {
		return dir
	}
	binaries.Lock()
	defer binaries.Unlock()
	if err := makeBinDir(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(binaries.dir, "payload-cache")
}

// makeBinDir makes this test binary's folder of built binaries once; the
// caller holds binaries' lock.
func makeBinDir() error {
	if binaries.dir != "" {
		return nil
	}
	dir, err := os.MkdirTemp("", "winnode-bin-")
	if err != nil {
		return err
	}
	binaries.dir, binaries.paths = dir, map[string]string{}
	return nil
}
