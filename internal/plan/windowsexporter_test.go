package plan

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/payload"
)

// metricsInput is renderInput with windows_exporter in the payload and its
// TLS files given.
func metricsInput() RenderInput {
	in := renderInput()
	in.Payload.Files = append(in.Payload.Files, payload.File{Name: PayloadWindowsExporter, HostPath: `C:\k\windows_exporter.exe`,
		SHA256: strings.Repeat("9", 64), Size: 600, Version: "v0.27.2"})
	in.Metrics = &MetricsFacts{CertPEM: []byte(testCA), Key: DigestOf([]byte("a private key"))}
	return in
}

// With metrics facts the plan runs windows_exporter under the wrapper on
// 9182 with its web configuration and the collectors an SRE needs, opens
// the port, writes the certificate and expects the caller's key; without
// them none of it is there.
func TestRenderWindowsExporter(t *testing.T) {
	r, err := Render(metricsInput())
	if err != nil {
		t.Fatal(err)
	}
	var svc *Service
	for i := range r.Plan.Services {
		if r.Plan.Services[i].Name == WindowsExporterService {
			svc = &r.Plan.Services[i]
		}
	}
	if svc == nil {
		t.Fatalf("no %s service in %v", WindowsExporterService, r.Plan.Services)
	}
	wantTail := []string{"--", `C:\k\windows_exporter.exe`, "--web.listen-address=:9182",
		`--web.config.file=C:\k\windows_exporter\web-config.yml`,
		"--collectors.enabled=cpu,cs,logical_disk,memory,net,os,service,system,container"}
	if svc.Binary != `C:\k\winnode-service.exe` || !slices.Equal(svc.Args[len(svc.Args)-len(wantTail):], wantTail) {
		t.Errorf("windows_exporter runs %s %q, want winnode-service.exe ... %q", svc.Binary, svc.Args, wantTail)
	}
	if !slices.Contains(svc.Args, `C:\var\log\windows_exporter\windows_exporter.log`) {
		t.Errorf("windows_exporter's log is not in C:\\var\\log\\windows_exporter: %q", svc.Args)
	}
	if !slices.Contains(r.Plan.FirewallPorts, FirewallPort{Name: "windows-exporter", Protocol: TCP, Port: 9182}) {
		t.Errorf("firewall ports %v: no 9182", r.Plan.FirewallPorts)
	}
	if got := string(findGenerated(t, r, WindowsExporterCertPath)); got != testCA {
		t.Errorf("certificate file = %q", got)
	}
	var key *File
	for i := range r.Plan.Files {
		if r.Plan.Files[i].Path == WindowsExporterKeyPath {
			key = &r.Plan.Files[i]
		}
	}
	if key == nil || key.SHA256 != DigestOf([]byte("a private key")).SHA256 {
		t.Errorf("the key's file is %+v, want the caller's digest", key)
	}
	for _, g := range r.Generated {
		if g.HostPath == WindowsExporterKeyPath {
			t.Error("the renderer generated the key: it must only see its digest")
		}
	}

	plain, err := Render(renderInput())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range plain.Plan.Services {
		if s.Name == WindowsExporterService {
			t.Error("windows_exporter without metrics facts")
		}
	}
	if len(plain.Plan.FirewallPorts) != 1 {
		t.Errorf("firewall ports without metrics: %v", plain.Plan.FirewallPorts)
	}
}

// The web configuration is exporter-toolkit's: tls_server_config with the
// certificate and key paths, TLS 1.2 at least (the real program loads it
// in the Wine tier, hack/wine/contract.sh): the operator's files, or the
// kubelet's serving certificate, which holds both in one file.
func TestWindowsExporterWebConfig(t *testing.T) {
	for _, tc := range []struct {
		kubeletServing bool
		cert, key      string
	}{
		{false, WindowsExporterCertPath, WindowsExporterKeyPath},
		{true, `C:\var\lib\kubelet\pki\kubelet-server-current.pem`, `C:\var\lib\kubelet\pki\kubelet-server-current.pem`},
	} {
		out, err := WindowsExporterWebConfig(tc.kubeletServing)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]map[string]string
		if err := yaml.UnmarshalStrict(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		want := map[string]string{"cert_file": tc.cert, "key_file": tc.key, "min_version": "TLS12"}
		if len(got) != 1 || len(got["tls_server_config"]) != 3 {
			t.Fatalf("web config %v", got)
		}
		for k, v := range want {
			if got["tls_server_config"][k] != v {
				t.Errorf("kubelet serving %v: %s = %q, want %q", tc.kubeletServing, k, got["tls_server_config"][k], v)
			}
		}
	}
}

// With the kubelet's serving certificate the plan writes only the web
// configuration (no certificate, no key to upload), and the service waits
// for the kubelet's file with the agent before windows_exporter starts.
func TestRenderWindowsExporterKubeletServing(t *testing.T) {
	in := metricsInput()
	in.Metrics = &MetricsFacts{KubeletServing: true}
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Plan.Files {
		if f.Path == WindowsExporterKeyPath || f.Path == WindowsExporterCertPath {
			t.Errorf("plan file %s: the exporter serves with the kubelet's certificate", f.Path)
		}
	}
	if web := string(findGenerated(t, r, WindowsExporterWebConfigPath)); !strings.Contains(web, "kubelet-server-current.pem") {
		t.Errorf("web config %q does not name the kubelet's certificate", web)
	}
	var svc *Service
	for i := range r.Plan.Services {
		if r.Plan.Services[i].Name == WindowsExporterService {
			svc = &r.Plan.Services[i]
		}
	}
	if svc == nil {
		t.Fatal("no windows_exporter service")
	}
	wantBefore := []string{"--before", `C:\k\winnode-agent.exe`, "--before-arg", "wait-certificate",
		"--before-arg", `--file=C:\var\lib\kubelet\pki\kubelet-server-current.pem`, "--"}
	i := slices.Index(svc.Args, "--before")
	if i < 0 || !slices.Equal(svc.Args[i:i+len(wantBefore)], wantBefore) {
		t.Errorf("windows_exporter's service args %q, want %q before the program", svc.Args, wantBefore)
	}
	if !slices.Contains(r.Plan.FirewallPorts, FirewallPort{Name: "windows-exporter", Protocol: TCP, Port: 9182}) {
		t.Errorf("firewall ports %v: no 9182", r.Plan.FirewallPorts)
	}
	op, err := Render(metricsInput())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range op.Plan.Services {
		if s.Name == WindowsExporterService && slices.Contains(s.Args, "--before") {
			t.Errorf("with the operator's certificate windows_exporter waits for nothing: %q", s.Args)
		}
	}
}

func TestRenderRefusesBadMetricsFacts(t *testing.T) {
	cases := map[string]func(*RenderInput){
		"certificate not PEM": func(in *RenderInput) { in.Metrics.CertPEM = []byte("not a certificate") },
		"no key digest":       func(in *RenderInput) { in.Metrics.Key = FileDigest{} },
		"no exporter in the payload": func(in *RenderInput) {
			in.Payload.Files = in.Payload.Files[:len(in.Payload.Files)-1]
		},
		"payload over the key":                     func(in *RenderInput) { in.Payload.Files[0].HostPath = WindowsExporterKeyPath },
		"kubelet's and the operator's certificate": func(in *RenderInput) { in.Metrics.KubeletServing = true },
	}
	for name, change := range cases {
		in := metricsInput()
		change(&in)
		if _, err := Render(in); err == nil {
			t.Errorf("%s: Render accepted it", name)
		}
	}
}
