package standin

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// writeConfig writes a containerd configuration into a test folder.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "containerd.toml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The configuration winnode writes (version 4) is read as containerd
// reads it; what containerd refuses, the stand-in refuses with containerd's
// words; what it only warns about, it warns about and ignores.
func TestContainerdConfig(t *testing.T) {
	log := &logger{program: "containerd", out: &strings.Builder{}}
	rt, err := loadContainerdConfig(log, writeConfig(t, `version = 4
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "mcr.microsoft.com/oss/kubernetes/pause:3.10"
[plugins.'io.containerd.cri.v1.images'.registry]
  config_path = 'C:\k\containerd\certs.d'
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['C:\k\cni\bin']
  conf_dir = 'C:\k\cni\config'
`), true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rt.CNIBinDirs, []string{`C:\k\cni\bin`}) || rt.CNIConfDir != `C:\k\cni\config` || rt.RegistryConfigPath != `C:\k\containerd\certs.d` || rt.SandboxImage != "mcr.microsoft.com/oss/kubernetes/pause:3.10" {
		t.Errorf("runtime %+v", rt)
	}
	for name, tc := range map[string]struct{ content, want string }{
		"version 5": {"version = 5\n", "expected containerd config version equal to or less than `4`, got `5`"},
		"syntax":    {"version = 4\n[plugins\n", "failed to unmarshal TOML at row 2 column"},
	} {
		_, err := loadContainerdConfig(log, writeConfig(t, tc.content), true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if _, err := loadContainerdConfig(log, filepath.Join(t.TempDir(), "none.toml"), true); err == nil || !strings.Contains(err.Error(), "The system cannot find the file specified") {
		t.Errorf("a missing --config: %v", err)
	}
	if rt, err := loadContainerdConfig(log, filepath.Join(t.TempDir(), "none.toml"), false); err != nil || rt.CNIBinDirs[0] != defaultCNIBinDir {
		t.Errorf("no configuration at the default path: %v, %+v: want the defaults", err, rt)
	}
}

// A version-3 bin_dir is only warned about, and the default stays; a
// version-2 file is migrated.
func TestContainerdConfigWarnsAndMigrates(t *testing.T) {
	out := &strings.Builder{}
	log := &logger{program: "containerd", out: out}
	rt, err := loadContainerdConfig(log, writeConfig(t, "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\n  bin_dir = 'C:\\k\\cni\\bin'\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if rt.CNIBinDirs[0] != defaultCNIBinDir || !strings.Contains(out.String(), `Ignoring unknown key in TOML for plugin key="cni bin_dir" plugin=io.containerd.cri.v1.runtime`) ||
		!strings.Contains(out.String(), "Configuration migrated from version 3") {
		t.Errorf("bin_dirs %v; log:\n%s", rt.CNIBinDirs, out)
	}
	rt, err = loadContainerdConfig(log, writeConfig(t, "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = \"C:/k/cni/bin\"\n  conf_dir = \"C:/k/cni/config\"\n"), true)
	if err != nil || !slices.Equal(rt.CNIBinDirs, []string{"C:/k/cni/bin"}) || rt.CNIConfDir != "C:/k/cni/config" {
		t.Errorf("version 2: %v, %+v", err, rt)
	}
}

// containerd's flags: exactly the recorded ones, the hidden --run-service,
// shorthands; anything else refused with urfave/cli's words.
func TestContainerdFlags(t *testing.T) {
	var f containerdFlags
	fs, err := containerdFlagSet(&f)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--run-service", "-c", `C:\k\containerd\containerd.toml`, "--log-level", "info", "--state", "x"}); err != nil || f.config != `C:\k\containerd\containerd.toml` || !f.runService {
		t.Errorf("containerd flags: %v, %+v", err, f)
	}
	fs, _ = containerdFlagSet(&f)
	if err := fs.Parse([]string{"--bogus"}); err == nil || err.Error() != "flag provided but not defined: -bogus" {
		t.Errorf("an unknown flag: %v", err)
	}
}

// registry is a registry a test runs: it answers every manifest, and
// records the paths asked for.
type registry struct {
	mu    sync.Mutex
	paths []string
	auth  []string
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.RequestURI())
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	r.mu.Unlock()
	w.Header().Set("Docker-Content-Digest", "sha256:0000000000000000000000000000000000000000000000000000000000000000")
}

// A pull goes through the registry's hosts.toml: its mirror first (with
// the mirror's organisation path and credentials); an unreachable mirror
// gives the source; when nothing answers, containerd's words.
func TestContainerdPull(t *testing.T) {
	reg := &registry{}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	mirror := strings.TrimPrefix(srv.URL, "http://")
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := closed.Addr().String()
	closed.Close()
	certs := t.TempDir()
	write := func(folder, content string) {
		if err := os.MkdirAll(filepath.Join(certs, folder), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certs, folder, "hosts.toml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("quay.io", "[host.\"https://"+mirror+"/org\"]\n  capabilities = [\"pull\", \"resolve\"]\n  [host.\"https://"+mirror+"/org\".header]\n    authorization = \"Basic dTpw\"\n")
	write(strings.ReplaceAll(dead, ":", "_")+"_", "")
	write("fails.example", "server = \"https://"+dead+"\"\n[host.\"https://"+dead+"\"]\n")
	c := &containerdSim{log: &logger{program: "containerd", out: &strings.Builder{}}, runtime: &containerdRuntime{RegistryConfigPath: certs}}
	ctx := context.Background()
	if err := c.pull(ctx, "quay.io/team/app:v1"); err != nil {
		t.Fatal(err)
	}
	if len(reg.paths) != 1 || reg.paths[0] != "/org/v2/team/app/manifests/v1?ns=quay.io" || reg.auth[0] != "Basic dTpw" {
		t.Errorf("the mirror was asked %v with %v", reg.paths, reg.auth)
	}
	if err := c.pull(ctx, "registry.example.com/app:v1"); err != nil {
		t.Errorf("a registry on the simulated internet: %v", err)
	}
	err := c.pull(ctx, "fails.example/app:v1")
	want := `failed to pull and unpack image "fails.example/app:v1": failed to resolve reference "fails.example/app:v1": failed to do request: Head "https://` + dead + `/v2/app/manifests/v1?ns=fails.example": dial tcp ` + dead + `: connect: connection refused`
	if err == nil || err.Error() != want {
		t.Errorf("an unreachable registry:\n got %v\nwant %s", err, want)
	}
	if err := c.pull(ctx, "fails.example/app@sha256:00"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a digest from hosts that may pull: %v", err)
	}
}

func TestParseReference(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                     "docker.io/library/busybox:latest",
		"team/app:v1":                 "docker.io/team/app:v1",
		"quay.io/org/app":             "quay.io/org/app:latest",
		"myreg:5000/app:v2":           "myreg:5000/app:v2",
		"localhost/app@sha256:abc":    "localhost/app@sha256:abc",
		"mcr.microsoft.com/a/b:ltsc2": "mcr.microsoft.com/a/b:ltsc2",
	} {
		r, err := parseReference(in)
		if err != nil || r.String() != want {
			t.Errorf("parseReference(%q) = %v, %v; want %s", in, r, err, want)
		}
	}
}
