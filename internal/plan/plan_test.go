package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/testkit"
)

const hashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const hashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

// examplePlan is a small valid plan: kubelet and kube-proxy on containerd.
func examplePlan() *Plan {
	return &Plan{
		SchemaVersion: SchemaVersion,
		Version:       "v0.1.0-abc",
		Directories:   []Directory{{Path: `C:\k`}, {Path: `C:\k\logs`, Logs: true}},
		Files: []File{
			{Path: `C:\k\kubelet.exe`, SHA256: hashA, Size: 10},
			{Path: `C:\k\kube-proxy.exe`, SHA256: hashB, Size: 20},
			{Path: `C:\k\kubelet.yaml`, SHA256: hashB, Size: 20},
		},
		HostServices: []string{"containerd"},
		Services: []Service{
			{
				Name: "kube-proxy", Binary: `C:\k\kube-proxy.exe`, Args: []string{"--v=2"},
				Dependencies: []string{"kubelet"}, StartType: StartAuto,
			},
			{
				Name: "kubelet", DisplayName: "Kubernetes kubelet", Binary: `C:\k\kubelet.exe`,
				Args: []string{`--config=C:\k\kubelet.yaml`, "--node-ip", "10.0.0.5"}, Uses: []string{`C:\k\kubelet.yaml`},
				Dependencies: []string{"containerd"}, StartType: StartAuto,
				Recovery: Recovery{
					Actions:     []RecoveryAction{{Type: RecoveryRestart, Delay: metav1.Duration{Duration: 5 * time.Second}}},
					ResetPeriod: metav1.Duration{Duration: time.Hour},
				},
				Environment: map[string]string{"KUBE_NETWORK": "cbr0"},
			},
		},
		FirewallPorts: []FirewallPort{{Name: "kubelet", Protocol: TCP, Port: 10250}},
		Checks:        []Check{{Type: CheckServiceRunning, Service: "kubelet"}, {Type: CheckFileExists, Path: `C:\k\kubelet.yaml`}},
	}
}

func encode(t testing.TB, p *Plan) []byte {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeValid(t *testing.T) {
	p := examplePlan()
	p.Files[0].Path = `/c:/k/../k/kubelet.exe` // SFTP form, lower-case drive, ".."
	p.Services[1].Binary = `c:/K/kubelet.exe`
	got, err := Decode(encode(t, p))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got.Files[0].Path != `C:\k\kubelet.exe` {
		t.Errorf("file path not canonical: %q", got.Files[0].Path)
	}
	if got.Services[1].Binary != `C:\K\kubelet.exe` {
		t.Errorf("binary path not canonical: %q", got.Services[1].Binary)
	}
	if got.Services[0].Description != ServiceDescription {
		t.Errorf("description = %q, want default %q", got.Services[0].Description, ServiceDescription)
	}
	if got.Staging() != DefaultStagingDir {
		t.Errorf("staging = %q", got.Staging())
	}
	if got.Services[1].Recovery.Actions[0].Delay.Duration != 5*time.Second {
		t.Errorf("recovery delay lost: %+v", got.Services[1].Recovery)
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p *Plan)
		raw    string // used instead of the plan when set
		want   string // substring of the error
	}{
		{name: "unknown schema", mutate: func(p *Plan) { p.SchemaVersion = "winnode.io/v9" }, want: `schemaVersion "winnode.io/v9" is not supported`},
		{name: "no schema", raw: `{"version":"x"}`, want: `schemaVersion "" is not supported`},
		{name: "not an object", raw: `[1]`, want: "not a JSON object"},
		{name: "unknown field", raw: `{"schemaVersion":"` + SchemaVersion + `","version":"x","extra":1}`, want: `unknown field "extra"`},
		{name: "trailing data", raw: `{"schemaVersion":"` + SchemaVersion + `","version":"x"} {}`, want: "after top-level value"},
		{name: "no version", mutate: func(p *Plan) { p.Version = "" }, want: "version: Required"},
		{name: "credentials without a cluster", mutate: func(p *Plan) { p.ClusterCredentials = []string{`C:\k\kubeconfig`} }, want: "cluster: Required"},
		{name: "relative credentials path", mutate: func(p *Plan) { p.Cluster = "c"; p.ClusterCredentials = []string{`kubeconfig`} }, want: "clusterCredentials[0]"},
		{name: "credentials in the windows folder", mutate: func(p *Plan) { p.Cluster = "c"; p.ClusterCredentials = []string{`C:\Windows\x`} }, want: `under C:\Windows`},
		{name: "relative file path", mutate: func(p *Plan) { p.Files[2].Path = `k\kubelet.yaml` }, want: "files[2].path"},
		{name: "UNC path", mutate: func(p *Plan) { p.Directories[0].Path = `\\server\share` }, want: "directories[0].path"},
		{name: "drive root", mutate: func(p *Plan) { p.Directories[0].Path = `C:\` }, want: "a drive root"},
		{name: "windows folder", mutate: func(p *Plan) { p.Directories[0].Path = `c:\windows\system32` }, want: `under C:\Windows`},
		{name: "bad hash", mutate: func(p *Plan) { p.Files[1].SHA256 = strings.ToUpper(hashB) }, want: "files[1].sha256"},
		{name: "short hash", mutate: func(p *Plan) { p.Files[1].SHA256 = "abc" }, want: "files[1].sha256"},
		{name: "negative size", mutate: func(p *Plan) { p.Files[1].Size = -1 }, want: "files[1].size"},
		{name: "duplicate file by case", mutate: func(p *Plan) { p.Files[1].Path = `C:\K\KUBELET.EXE` }, want: "files[1].path: Duplicate"},
		{name: "file is a directory", mutate: func(p *Plan) { p.Files[2].Path = `C:\k\logs` }, want: "is also listed as a directory"},
		{name: "binary not a plan file", mutate: func(p *Plan) { p.Services[0].Binary = `C:\k\other.exe` }, want: "services[0].binary"},
		{name: "uses unknown file", mutate: func(p *Plan) { p.Services[1].Uses = []string{`C:\k\nope.yaml`} }, want: "services[1].uses[0]: Not found"},
		{name: "unknown dependency", mutate: func(p *Plan) { p.Services[0].Dependencies = []string{"kubelett"} }, want: `services[0].dependencies[0]: Not found: "kubelett"`},
		{name: "self dependency", mutate: func(p *Plan) { p.Services[0].Dependencies = []string{"KUBE-PROXY"} }, want: "cannot depend on itself"},
		{name: "cycle", mutate: func(p *Plan) { p.Services[1].Dependencies = []string{"kube-proxy"} }, want: "cycle: kube-proxy -> kubelet -> kube-proxy"},
		{name: "duplicate service", mutate: func(p *Plan) { p.Services[1].Name = "Kube-Proxy" }, want: "services[1].name: Duplicate"},
		{name: "service shadows host service", mutate: func(p *Plan) { p.Services[1].Name = "containerd" }, want: "services[1].name: Duplicate"},
		{name: "bad service name", mutate: func(p *Plan) { p.Services[1].Name = `a\b` }, want: "services[1].name"},
		{name: "bad start type", mutate: func(p *Plan) { p.Services[1].StartType = "boot" }, want: "services[1].startType: Unsupported"},
		{name: "foreign description", mutate: func(p *Plan) { p.Services[1].Description = "mine" }, want: "services[1].description"},
		{name: "bad recovery", mutate: func(p *Plan) { p.Services[1].Recovery.Actions[0].Type = "reboot" }, want: "recovery.actions[0].type"},
		{name: "negative delay", mutate: func(p *Plan) { p.Services[1].Recovery.Actions[0].Delay.Duration = -time.Second }, want: "recovery.actions[0].delay"},
		{name: "NUL in arg", mutate: func(p *Plan) { p.Services[1].Args[0] = "a\x00b" }, want: "services[1].args[0]"},
		{name: "bad env name", mutate: func(p *Plan) { p.Services[1].Environment = map[string]string{"A=B": "c"} }, want: "services[1].environment[A=B]"},
		{name: "bad firewall port", mutate: func(p *Plan) { p.FirewallPorts[0].Port = 70000 }, want: "firewallPorts[0].port"},
		{name: "bad firewall protocol", mutate: func(p *Plan) { p.FirewallPorts[0].Protocol = "ICMP" }, want: "firewallPorts[0].protocol"},
		{name: "bad firewall name", mutate: func(p *Plan) { p.FirewallPorts[0].Name = "Kubelet Port" }, want: "firewallPorts[0].name"},
		{name: "check unknown service", mutate: func(p *Plan) { p.Checks[0].Service = "nope" }, want: "checks[0].service"},
		{name: "check bad type", mutate: func(p *Plan) { p.Checks[0].Type = "magic" }, want: "checks[0].type"},
		{name: "bad staging dir", mutate: func(p *Plan) { p.StagingDir = "staging" }, want: "stagingDir"},
		{name: "encoded file in a v1 plan", mutate: func(p *Plan) { encodeFile(&p.Files[1]) }, want: `files[1].encoding: Invalid value: "zstd": needs schemaVersion "winnode.io/v2"`},
		{name: "unknown encoding", mutate: func(p *Plan) {
			p.SchemaVersion = SchemaVersionEncoded
			encodeFile(&p.Files[1])
			p.Files[1].Encoding = "gzip"
		}, want: "files[1].encoding: Unsupported value"},
		{name: "bad encoded hash", mutate: func(p *Plan) {
			p.SchemaVersion = SchemaVersionEncoded
			encodeFile(&p.Files[1])
			p.Files[1].EncodedSHA256 = "abc"
		}, want: "files[1].encodedSHA256"},
		{name: "negative encoded size", mutate: func(p *Plan) {
			p.SchemaVersion = SchemaVersionEncoded
			encodeFile(&p.Files[1])
			p.Files[1].EncodedSize = -1
		}, want: "files[1].encodedSize"},
		{name: "encoded hash without encoding", mutate: func(p *Plan) {
			p.SchemaVersion = SchemaVersionEncoded
			encodeFile(&p.Files[1])
			p.Files[1].Encoding = ""
		}, want: "files[1].encoding: Required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.raw == "" {
				p := examplePlan()
				tc.mutate(p)
				data = encode(t, p)
			}
			_, err := Decode(data)
			if err == nil {
				t.Fatalf("Decode accepted %s", data)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestDecodeReportsEveryProblem(t *testing.T) {
	p := examplePlan()
	p.Files[0].SHA256 = "x"
	p.FirewallPorts[0].Port = 0
	_, err := Decode(encode(t, p))
	if err == nil || !strings.Contains(err.Error(), "files[0].sha256") || !strings.Contains(err.Error(), "firewallPorts[0].port") {
		t.Fatalf("want both problems reported, got %v", err)
	}
}

func TestStartOrder(t *testing.T) {
	services := []Service{
		{Name: "c", Dependencies: []string{"b", "containerd"}},
		{Name: "a"},
		{Name: "b", Dependencies: []string{"A"}},
		{Name: "d"},
	}
	got, err := StartOrder(services)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a b c d"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	services[1].Dependencies = []string{"c"}
	if _, err := StartOrder(services); err == nil || !strings.Contains(err.Error(), "c -> b -> a -> c") {
		t.Fatalf("want cycle c -> b -> a -> c, got %v", err)
	}
}

func TestKubeletConfigGolden(t *testing.T) {
	c, err := KubeletConfig(KubeletConfigOptions{
		ClientCAFile: `c:/k/kubelet-ca.crt`,
		ClusterDNS:   []string{"10.96.0.10"},
		Verbosity:    2,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := KubeletConfigYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "kubelet-config.yaml", got)

	if _, err := KubeletConfig(KubeletConfigOptions{ClientCAFile: "kubelet-ca.crt"}); err == nil {
		t.Error("a relative client CA path was accepted")
	}
}

func TestPlanJSONGolden(t *testing.T) {
	b, err := json.MarshalIndent(examplePlan(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "plan.json", append(b, '\n'))
	if _, err := Decode(b); err != nil {
		t.Fatalf("the golden plan does not decode: %v", err)
	}
}

// encodeFile gives a plan file a zstd blob.
func encodeFile(f *File) {
	f.Encoding, f.EncodedSHA256, f.EncodedSize = EncodingZstd, strings.Repeat("e", 64), f.Size/3
}

// A v1 plan (what operators before compressed transfer rendered, and what
// an agent's state holds from then) still decodes; so does a v2 plan with
// an encoded file.
func TestDecodeBothSchemas(t *testing.T) {
	p := examplePlan()
	if _, err := Decode(encode(t, p)); err != nil {
		t.Fatalf("v1 plan: %v", err)
	}
	p.SchemaVersion = SchemaVersionEncoded
	encodeFile(&p.Files[1])
	got, err := Decode(encode(t, p))
	if err != nil {
		t.Fatalf("v2 plan: %v", err)
	}
	if f := got.Files[1]; f.Encoding != EncodingZstd || f.EncodedSHA256 != strings.Repeat("e", 64) || f.EncodedSize != p.Files[1].Size/3 {
		t.Fatalf("encoded file decoded as %+v", f)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encode(f, examplePlan()))
	encoded := examplePlan()
	encoded.SchemaVersion = SchemaVersionEncoded
	encodeFile(&encoded.Files[0])
	f.Add(encode(f, encoded))
	f.Add([]byte(`{"schemaVersion":"` + SchemaVersion + `","version":"x","services":[{"name":"a","binary":"C:\\a.exe","startType":"auto","dependencies":["a"]}]}`))
	f.Add([]byte(`{"schemaVersion":"` + SchemaVersion + `","version":"x","files":[{"path":"/C:/k/../../x","sha256":"` + hashA + `"}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data)
		if err != nil {
			return
		}
		// A decoded plan re-encodes to a plan that decodes to the same thing.
		again, err := Decode(encode(t, p))
		if err != nil {
			t.Fatalf("a decoded plan does not decode again: %v\n%s", err, encode(t, p))
		}
		if string(encode(t, again)) != string(encode(t, p)) {
			t.Fatalf("decoding is not stable:\n%s\n%s", encode(t, p), encode(t, again))
		}
		if _, err := StartOrder(p.Services); err != nil {
			t.Fatalf("a decoded plan has no start order: %v", err)
		}
	})
}

func TestWithin(t *testing.T) {
	roots := []string{`C:\k`, `C:\ProgramData\winnode`}
	for p, want := range map[string]bool{
		`C:\k`:                       true,
		`c:\K\kubelet.exe`:           true,
		`C:\k\cni\bin\x.exe`:         true,
		`C:\ProgramData\WINNODE\x`:   true,
		`C:\k\..\Windows`:            false,
		`C:\kx\a`:                    false,
		`C:\Windows\System32\config`: false,
		`D:\k\x`:                     false,
		`D:\x`:                       false,
		`C:\`:                        false,
		`C:\ProgramData`:             false,
		`k\x`:                        false,
		`\\server\k\x`:               false,
	} {
		if got := Within(p, roots); got != want {
			t.Errorf("Within(%q) = %v, want %v", p, got, want)
		}
	}
	if Within(`C:\x`, []string{`C:\`}) {
		t.Error("a drive root counts as winnode's folder")
	}
}
