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
// in the Wine tier, hack/wine/contract.sh).
func TestWindowsExporterWebConfig(t *testing.T) {
	out, err := WindowsExporterWebConfig()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]string
	if err := yaml.UnmarshalStrict(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	want := map[string]string{"cert_file": WindowsExporterCertPath, "key_file": WindowsExporterKeyPath, "min_version": "TLS12"}
	if len(got) != 1 || len(got["tls_server_config"]) != 3 {
		t.Fatalf("web config %v", got)
	}
	for k, v := range want {
		if got["tls_server_config"][k] != v {
			t.Errorf("%s = %q, want %q", k, got["tls_server_config"][k], v)
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
		"payload over the key": func(in *RenderInput) { in.Payload.Files[0].HostPath = WindowsExporterKeyPath },
	}
	for name, change := range cases {
		in := metricsInput()
		change(&in)
		if _, err := Render(in); err == nil {
			t.Errorf("%s: Render accepted it", name)
		}
	}
}
