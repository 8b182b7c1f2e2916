package plan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/testkit"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

func renderInput() RenderInput {
	return RenderInput{
		Cluster: ClusterFacts{
			Server:              "https://10.0.0.1:6443",
			CAData:              []byte(testCA),
			ClusterDNS:          []string{"10.96.0.10"},
			ClusterDomain:       "cluster.local",
			BootstrapKubeconfig: DigestOf([]byte("bootstrap kubeconfig with a token")),
		},
		Host: HostFacts{
			Info: &Info{
				SchemaVersion: SchemaVersion,
				Hostname:      "WIN-ABC123",
				FQDN:          "WIN-ABC123.example.com",
				IPv4:          []string{"10.0.0.5", "192.168.1.5"},
				DefaultIPv4:   "10.0.0.5",
				OS:            OSInfo{ProductName: "Windows Server 2022 Datacenter", Build: "10.0.20348"},
				Containerd:    ServiceInfo{Present: true, Running: true, State: "Running"},
			},
			Address: "192.168.1.5",
		},
		Payload: &payload.Manifest{SchemaVersion: payload.SchemaVersion, Files: []payload.File{
			{Name: "winnode-agent.exe", HostPath: `C:\k\winnode-agent.exe`, SHA256: hashA, Size: 100, Version: "v0.1.0"},
			{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, SHA256: hashB, Size: 200, Version: "v1.37.1",
				Encoding: "zstd", EncodedSHA256: strings.Repeat("d", 64), EncodedSize: 70},
			{Name: "kube-proxy.exe", HostPath: `C:\k\kube-proxy.exe`, SHA256: strings.Repeat("c", 64), Size: 300, Version: "v1.37.1",
				Encoding: "zstd", EncodedSHA256: strings.Repeat("f", 64), EncodedSize: 90},
			{Name: "flanneld.exe", HostPath: `C:\k\flanneld.exe`, SHA256: strings.Repeat("e", 64), Size: 400, Version: "v0.28.10"},
			{Name: "winnode-service.exe", HostPath: `C:\k\winnode-service.exe`, SHA256: strings.Repeat("7", 64), Size: 50, Version: "v0.1.0"},
			{Name: "csi-proxy.exe", HostPath: `C:\k\csi-proxy.exe`, SHA256: strings.Repeat("8", 64), Size: 500, Version: "v1.1.3"},
		}},
		Network: NetworkFacts{
			Mode: NetworkFlannel, ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12", PodCIDR: "10.244.3.0/24",
			NetworkName: "vxlan0", VNI: 4096, Port: 4789,
		},
		OperatorVersion: "v0.1.0",
	}
}

// Payload files travel as the payload has them: a compressed one is staged
// encoded, and its plan says so in the schema old agents refuse; a plan
// with no encoded file keeps the schema they read.
func TestRenderEncodedFiles(t *testing.T) {
	r, err := Render(renderInput())
	if err != nil {
		t.Fatal(err)
	}
	if r.Plan.SchemaVersion != SchemaVersionEncoded {
		t.Errorf("schemaVersion = %q, want %q", r.Plan.SchemaVersion, SchemaVersionEncoded)
	}
	for _, f := range r.Plan.Files {
		want := File{Path: f.Path, SHA256: f.SHA256, Size: f.Size}
		switch f.Path {
		case `C:\k\kubelet.exe`:
			want.Encoding, want.EncodedSHA256, want.EncodedSize = EncodingZstd, strings.Repeat("d", 64), 70
		case `C:\k\kube-proxy.exe`:
			want.Encoding, want.EncodedSHA256, want.EncodedSize = EncodingZstd, strings.Repeat("f", 64), 90
		}
		if f != want {
			t.Errorf("file %+v, want %+v", f, want)
		}
	}

	in := renderInput()
	for i := range in.Payload.Files {
		f := &in.Payload.Files[i]
		f.Encoding, f.EncodedSHA256, f.EncodedSize = "", "", 0
	}
	plain, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Plan.SchemaVersion != SchemaVersion || bytes.Contains(plain.JSON, []byte("encod")) {
		t.Errorf("a plan with no encoded file is not plain %s:\n%s", SchemaVersion, plain.JSON)
	}
}

func TestRenderGolden(t *testing.T) {
	r, err := Render(renderInput())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	testkit.Golden(t, "render.golden.json", r.JSON)
	// The agent must accept what the operator renders.
	p, err := Decode(r.JSON)
	if err != nil {
		t.Fatalf("the agent's Decode refuses the rendered plan: %v", err)
	}
	if p.Version != r.Plan.Version {
		t.Errorf("decoded version %q, rendered %q", p.Version, r.Plan.Version)
	}
	testkit.Golden(t, "kube-proxy.golden.yaml", subnetFile(t, r, "10.244.3.0/24", KubeProxyConfigPath))
	kubeletYAML := string(findGenerated(t, r, KubeletConfigPath))
	for _, want := range []string{"cgroupsPerQOS: false", "enforceNodeAllocatable: []", "10.96.0.10", `clientCAFile: C:\k\ca.crt`, "key: os"} {
		if !strings.Contains(kubeletYAML, want) {
			t.Errorf("kubelet configuration lacks %q:\n%s", want, kubeletYAML)
		}
	}
}

func findGenerated(t *testing.T, r *Rendered, path string) []byte {
	t.Helper()
	for _, g := range r.Generated {
		if g.HostPath == path {
			return g.Content
		}
	}
	t.Fatalf("no generated file %s", path)
	return nil
}

func TestRenderIsDeterministic(t *testing.T) {
	a, err := Render(renderInput())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := Render(renderInput())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.JSON, b.JSON) {
			t.Fatalf("same input, different bytes:\n%s\n---\n%s", a.JSON, b.JSON)
		}
	}
}

// Every input that matters changes the version; the host's other facts
// (FQDN, installed plan) do not.
func TestRenderVersionFollowsContent(t *testing.T) {
	base, err := Render(renderInput())
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(*RenderInput){
		"operator version":  func(in *RenderInput) { in.OperatorVersion = "v0.2.0" },
		"kubelet binary":    func(in *RenderInput) { in.Payload.Files[1].SHA256 = strings.Repeat("d", 64) },
		"bootstrap token":   func(in *RenderInput) { in.Cluster.BootstrapKubeconfig = DigestOf([]byte("another token")) },
		"cluster CA":        func(in *RenderInput) { in.Cluster.CAData = []byte(testCA + testCA) },
		"cluster DNS":       func(in *RenderInput) { in.Cluster.ClusterDNS = []string{"10.96.0.11"} },
		"hostname":          func(in *RenderInput) { in.Host.Info.Hostname = "WIN-OTHER" },
		"address (node IP)": func(in *RenderInput) { in.Host.Address = "10.0.0.5" },
		"extra payload files": func(in *RenderInput) {
			in.Payload.Files = append(in.Payload.Files, in.Payload.Files[0])
			in.Payload.Files[len(in.Payload.Files)-1].Name, in.Payload.Files[len(in.Payload.Files)-1].HostPath = "x.exe", `C:\k\x.exe`
		},
		"kubelet CA":     func(in *RenderInput) { in.Cluster.KubeletCAData = []byte(testCA) },
		"cloud provider": func(in *RenderInput) { in.Cluster.CloudProvider = "external" },
		"network mode":   func(in *RenderInput) { in.Network = NetworkFacts{Mode: NetworkExternal} },
	}
	for name, change := range changes {
		in := renderInput()
		change(&in)
		r, err := Render(in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if r.Plan.Version == base.Plan.Version {
			t.Errorf("%s changed, the plan version did not (%s)", name, r.Plan.Version)
		}
	}
	same := renderInput()
	same.Host.Info.FQDN = "other.example.com"
	same.Host.Info.InstalledPlan = &InstalledPlan{Version: "old", Complete: true}
	// The host reads the node's subnet itself (podnetwork.go).
	same.Network.PodCIDR = "10.244.4.0/24"
	r, err := Render(same)
	if err != nil {
		t.Fatal(err)
	}
	if r.Plan.Version != base.Plan.Version {
		t.Errorf("facts the plan does not use changed its version: %s -> %s", base.Plan.Version, r.Plan.Version)
	}
}

func TestRenderNodeNameAndIP(t *testing.T) {
	r, err := Render(renderInput())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := r.Plan.Service(KubeletService)
	args := strings.Join(s.Args, " ")
	for _, want := range []string{"--hostname-override=win-abc123", "--node-ip=192.168.1.5", "--register-with-taints=os=Windows:NoSchedule"} {
		if !strings.Contains(args, want) {
			t.Errorf("kubelet args %q lack %q", args, want)
		}
	}
	in := renderInput()
	in.Host.Address = "win-abc123.example.com" // a DNS name: the default route's address
	r, err = Render(in)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = r.Plan.Service(KubeletService)
	if args := strings.Join(s.Args, " "); !strings.Contains(args, "--node-ip=10.0.0.5") {
		t.Errorf("kubelet args %q: want the default route's address", args)
	}
}

func TestRenderRefusesIncompleteInput(t *testing.T) {
	cases := map[string]func(*RenderInput){
		"no hostname":         func(in *RenderInput) { in.Host.Info.Hostname = "" },
		"no CA":               func(in *RenderInput) { in.Cluster.CAData = nil },
		"no bootstrap":        func(in *RenderInput) { in.Cluster.BootstrapKubeconfig = FileDigest{} },
		"no kubelet":          func(in *RenderInput) { in.Payload.Files = in.Payload.Files[:1] },
		"no version":          func(in *RenderInput) { in.OperatorVersion = "" },
		"bad DNS":             func(in *RenderInput) { in.Cluster.ClusterDNS = []string{"kube-dns"} },
		"payload over config": func(in *RenderInput) { in.Payload.Files[0].HostPath = KubeletConfigPath },
		"no payload":          func(in *RenderInput) { in.Payload = nil },
	}
	for name, change := range cases {
		in := renderInput()
		change(&in)
		if _, err := Render(in); err == nil {
			t.Errorf("%s: Render accepted it", name)
		}
	}
	if _, err := Render(RenderInput{}); err == nil {
		t.Error("empty input accepted")
	}
}

// A platform's own cluster ID decides alone: the same cluster with a new
// CA bundle or URL keeps its ID, another cluster gets another.
func TestClusterIDFromPlatform(t *testing.T) {
	one := ClusterFacts{Server: "https://api-int.a:6443", CAData: []byte("ca-one"), PlatformClusterID: "6c7f2f8e-0d1e-4c8b-9a55-3e1d2b7a9c10"}
	rotated := one
	rotated.Server, rotated.CAData = "https://api-int.b:6443", []byte("ca-one\nca-two")
	if one.ID() != rotated.ID() {
		t.Errorf("a rotated CA or moved URL changed the platform cluster's ID: %s, %s", one.ID(), rotated.ID())
	}
	other := one
	other.PlatformClusterID = "0f1e2d3c-0000-4000-8000-000000000000"
	withoutPlatform := one
	withoutPlatform.PlatformClusterID = ""
	if other.ID() == one.ID() || withoutPlatform.ID() != ClusterID(one.Server, one.CAData) || withoutPlatform.ID() == one.ID() {
		t.Errorf("IDs: %s, other cluster %s, without a platform ID %s", one.ID(), other.ID(), withoutPlatform.ID())
	}
}

func TestClusterIDNamesServerAndCA(t *testing.T) {
	a := ClusterID("https://10.0.0.1:6443", []byte("ca-one"))
	if a != ClusterID("https://10.0.0.1:6443", []byte("ca-one")) {
		t.Fatal("ClusterID is not deterministic")
	}
	for _, other := range []string{
		ClusterID("https://10.0.0.2:6443", []byte("ca-one")),
		ClusterID("https://10.0.0.1:6443", []byte("ca-two")),
		ClusterID("https://10.0.0.1:6443ca-one", nil), // no ambiguity between the two inputs
	} {
		if other == a {
			t.Errorf("two clusters share the ID %s", a)
		}
	}
}

// The platform's kubelet CA and cloud provider (OpenShift's): a CA file of
// its own that the kubelet configuration names, and the Linux kubelets'
// --cloud-provider. No --cloud-config: the kubelet of Kubernetes v1.37 has
// no such flag (the contract check, hack/wine/contract.sh, runs the real
// kubelet on every rendered command line).
func TestRenderKubeletCAAndCloud(t *testing.T) {
	in := renderInput()
	in.Cluster.KubeletCAData = []byte("-----BEGIN CERTIFICATE-----\nMIIBkubelet\n-----END CERTIFICATE-----\n")
	in.Cluster.CloudProvider = "external"
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := findGenerated(t, r, KubeletCAPath); !bytes.Equal(got, in.Cluster.KubeletCAData) {
		t.Errorf("%s = %q", KubeletCAPath, got)
	}
	if kc := string(findGenerated(t, r, KubeletConfigPath)); !strings.Contains(kc, `clientCAFile: C:\k\kubelet-ca.crt`) {
		t.Errorf("the kubelet configuration does not name the kubelet CA:\n%s", kc)
	}
	args := strings.Join(r.Plan.Services[0].Args, " ")
	if !strings.Contains(args, "--cloud-provider=external") || strings.Contains(args, "--cloud-config") {
		t.Errorf("kubelet args: %s; want --cloud-provider=external and no --cloud-config", args)
	}
	in.Cluster.CloudProvider = "aws"
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), `cloud provider "aws"`) {
		t.Errorf("a built-in cloud provider: got %v", err)
	}
}

// A Machine's provider ID reaches the kubelet's configuration, so the Node
// registers with it and the Machine API links Node and Machine; without
// one the configuration has none.
func TestRenderProviderID(t *testing.T) {
	in := renderInput()
	in.Host.ProviderID = "aws:///us-east-1a/i-0123456789abcdef0"
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if kc := string(findGenerated(t, r, KubeletConfigPath)); !strings.Contains(kc, "providerID: aws:///us-east-1a/i-0123456789abcdef0\n") {
		t.Errorf("kubelet configuration lacks the provider ID:\n%s", kc)
	}
	base, err := Render(renderInput())
	if err != nil {
		t.Fatal(err)
	}
	if kc := string(findGenerated(t, base, KubeletConfigPath)); strings.Contains(kc, "providerID") {
		t.Errorf("kubelet configuration without a provider ID names one:\n%s", kc)
	}
}
