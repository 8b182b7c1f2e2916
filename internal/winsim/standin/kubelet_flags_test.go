package standin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProgramName(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/x/kubelet.exe":                              "kubelet",
		`C:\k\Kube-Proxy.EXE`:                             "kube-proxy",
		"/root/C/Program Files/containerd/containerd.exe": "containerd",
		"kubelet":                 "kubelet",
		"/usr/bin/winsim-standin": "winsim-standin",
	} {
		if got := ProgramName(in); got != want {
			t.Errorf("ProgramName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKubeletFlags(t *testing.T) {
	good := []string{
		`--config=C:\k\kubelet.conf`, `--bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig`, `--kubeconfig=C:\k\kubeconfig`,
		`--cert-dir=c:\var\lib\kubelet\pki\`, "--hostname-override=win-abc", "--node-ip=127.0.0.10",
		"--node-labels=node.kubernetes.io/windows-build=10.0.17763,example.com/team=a", "--register-with-taints=os=Windows:NoSchedule",
		"--windows-service", "--v=3",
		"--container-runtime-endpoint=npipe://./pipe/containerd-containerd", "--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS",
		"--cloud-provider=external", "--max-pods=50", "--fail-swap-on=false",
	}
	f, err := parseKubeletFlags(good)
	if err != nil {
		t.Fatalf("flags the real kubelet accepts: %v", err)
	}
	if f.nodeLabels["example.com/team"] != "a" || f.verbosity != 3 || !f.windowsService {
		t.Errorf("parsed flags: %+v", f)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag=1"}, "failed to parse kubelet flag: unknown flag: --no-such-flag"},
		// Removed from the kubelet: klog's file flags in v1.26 (KEP-2845),
		// --cloud-config with the in-tree cloud providers.
		{[]string{"--logtostderr=false"}, "failed to parse kubelet flag: unknown flag: --logtostderr"},
		{[]string{`--log-file=C:\var\log\kubelet\kubelet.log`}, "failed to parse kubelet flag: unknown flag: --log-file"},
		{[]string{`--cloud-config=C:\k\cloud.conf`}, "failed to parse kubelet flag: unknown flag: --cloud-config"},
		{[]string{"--node-labels=node-role.kubernetes.io/worker="}, "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/worker]"},
		{[]string{"--node-labels=bad key=x"}, "invalid node labels"},
		{[]string{"--register-with-taints=os=Windows"}, "invalid taint spec"},
		{[]string{"--register-with-taints=os=Windows:Sometimes"}, "invalid taint effect"},
		{[]string{"--windows-priorityclass=FAST"}, "--windows-priorityclass"},
		{[]string{"--cloud-provider=aws"}, "unknown cloud provider"},
		{[]string{"--node-ip=not-an-ip"}, "--node-ip"},
	} {
		_, err := parseKubeletFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

func TestKubeletExitsOneOnUnknownFlag(t *testing.T) {
	if code := Main("kubelet.exe", []string{"--bogus"}); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if code := Main("kube-proxy.exe", []string{"--bogus"}); code != 1 {
		t.Errorf("kube-proxy: exit code %d, want 1", code)
	}
	if code := Main("containerd.exe", []string{"--bogus"}); code != 1 {
		t.Errorf("containerd: exit code %d, want 1", code)
	}
	if code := Main("notepad.exe", nil); code != 1 {
		t.Errorf("unknown program name: exit code %d, want 1", code)
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKubeletConfigWindowsRules(t *testing.T) {
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	ok := head + "cgroupsPerQOS: false\nenforceNodeAllocatable: []\nserverTLSBootstrap: true\nmaxPods: 50\n"
	cfg, _, err := loadKubeletConfig(writeTemp(t, "ok.yaml", ok))
	if err != nil || !cfg.ServerTLSBootstrap || cfg.MaxPods != 50 {
		t.Fatalf("a Windows kubelet configuration: %+v, %v", cfg, err)
	}
	for _, tc := range []struct{ body, want string }{
		{head + "cgroupsPerQOS: true\n", "cgroupsPerQOS"},
		{head + "cgroupsPerQOS: false\nenforceNodeAllocatable: [pods]\n", "enforceNodeAllocatable"},
		{head + "singleProcessOOMKill: true\n", "singleProcessOOMKill"},
		{"apiVersion: v1\nkind: ConfigMap\n", "want kubelet.config.k8s.io/v1beta1 KubeletConfiguration"},
		{"{{{", "failed to decode"},
		{head + "systemReserved:\n  cpu: lots\n", "systemReserved[cpu]"},
	} {
		_, _, err := loadKubeletConfig(writeTemp(t, "bad.yaml", tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want it to mention %q", tc.body, err, tc.want)
		}
	}
	// Unknown fields are a warning, as in the kubelet's lenient decoding.
	_, warnings, err := loadKubeletConfig(writeTemp(t, "w.yaml", head+"notAField: 1\n"))
	if err != nil || len(warnings) != 1 {
		t.Errorf("unknown field: warnings %v, err %v; want one warning", warnings, err)
	}
}

func TestHostPath(t *testing.T) {
	root := t.TempDir()
	t.Setenv("WINSIM_ROOT", root)
	for in, want := range map[string]string{
		`C:\k\kubelet.conf`: filepath.Join(root, "k", "kubelet.conf"),
		`/var/lib/kubelet`:  filepath.Join(root, "var", "lib", "kubelet"),
		`c:/k/x`:            filepath.Join(root, "k", "x"),
		`relative\x`:        "relative/x",
	} {
		if got, err := hostPath(in); err != nil || got != want {
			t.Errorf("hostPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := hostPath(`D:\x`); err == nil {
		t.Errorf("drive D: resolved on a simulated host")
	}
}

func FuzzParseTaints(f *testing.F) {
	for _, s := range []string{"os=Windows:NoSchedule", "a:NoExecute,b=c:PreferNoSchedule", "x=y", ":", "=:NoSchedule"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		taints, err := parseTaints(s)
		if err != nil {
			return
		}
		for _, tt := range taints {
			if tt.Key == "" || tt.Effect == "" {
				t.Fatalf("parseTaints(%q) accepted %+v", s, tt)
			}
		}
	})
}

func FuzzKubeletConfig(f *testing.F) {
	f.Add("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupsPerQOS: false\n")
	f.Add("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nenforceNodeAllocatable: [none]\n")
	f.Add("{}")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := loadKubeletConfig(p)
		if err == nil && cfg.CgroupsPerQOS != nil && *cfg.CgroupsPerQOS {
			t.Fatalf("accepted cgroupsPerQOS: true")
		}
	})
}
