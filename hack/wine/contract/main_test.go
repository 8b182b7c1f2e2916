package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// TestWrite renders the whole input space with a payload's manifest and
// checks what the Wine tier gets: every case's command lines and
// configurations, once each, and the negative case.
func TestWrite(t *testing.T) {
	m := &payload.Manifest{SchemaVersion: payload.SchemaVersion}
	for _, name := range []string{"winnode-agent.exe", "winnode-service.exe", "kubelet.exe", "kube-proxy.exe", "flanneld.exe", "csi-proxy.exe", "windows_exporter.exe"} {
		m.Files = append(m.Files, payload.File{Name: name, HostPath: `C:\k\` + name, SHA256: strings.Repeat("a", 64), Size: 1, Version: "v1"})
	}
	// The container runtime winnode manages (the host-added cases).
	for _, name := range []string{"containerd.exe", "containerd-shim-runhcs-v1.exe"} {
		m.Files = append(m.Files, payload.File{Name: name, HostPath: `C:\k\containerd\` + name, SHA256: strings.Repeat("a", 64), Size: 1, Version: "v1"})
	}
	out := t.TempDir()
	if err := write(m, out, filepath.Join("..", "..", "..", "internal", "ignition", "testdata")); err != nil {
		t.Fatal(err)
	}
	cmds, _ := filepath.Glob(filepath.Join(out, "services", "*.cmd"))
	var all []string
	for _, c := range cmds {
		data, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, strings.ReplaceAll(string(data), "\x00", " "))
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{`C:\k\kubelet.exe --config=`, `C:\k\kube-proxy.exe --config=C:\k\kube-proxy.yaml`, `C:\k\flanneld.exe --kube-subnet-mgr`,
		`--log-file C:\k\log\kubelet.log --log-file-size 100M --log-file-age 168h0m0s -- C:\k\kubelet.exe`, `C:\k\hybrid-overlay-node.exe --node`,
		`C:\k\winnode-service.exe --name csi-proxy --log-file C:\var\log\csi-proxy\csi-proxy.log`, `-- C:\k\csi-proxy.exe -kubelet-path C:\var\lib\kubelet -v=2`,
		`-- C:\k\windows_exporter.exe --web.listen-address=:9182 --web.config.file=C:\k\windows_exporter\web-config.yml --collectors.enabled=cpu,cs,logical_disk,memory,net,os,service,system,container`} {
		if !strings.Contains(joined, want) {
			t.Errorf("no command line has %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "--logtostderr") {
		t.Errorf("a command line has --logtostderr:\n%s", joined)
	}
	var cases []string
	caseFiles, _ := filepath.Glob(filepath.Join(out, "services", "*.cmd.cases"))
	for _, f := range caseFiles {
		data, _ := os.ReadFile(f)
		cases = append(cases, string(data))
	}
	for _, want := range []string{"flannel/kubernetes/2019/byoh/kubelet", "flannel/kubernetes/2019/byoh/containerd"} {
		if !strings.Contains(strings.Join(cases, ""), want) {
			t.Errorf("no command line is written for case %s", want)
		}
	}
	webs, _ := filepath.Glob(filepath.Join(out, "configs", "windows_exporter", "*.yml"))
	var webAll []string
	for _, f := range webs {
		data, _ := os.ReadFile(f)
		webAll = append(webAll, string(data))
	}
	for _, want := range []string{`cert_file: C:\k\windows_exporter\tls.crt`, `key_file: C:\var\lib\kubelet\pki\kubelet-server-current.pem`} {
		if !strings.Contains(strings.Join(webAll, ""), want) {
			t.Errorf("no windows_exporter web configuration has %q: %q", want, webAll)
		}
	}
	if !strings.Contains(joined, `--before C:\k\winnode-agent.exe --before-arg wait-certificate`) {
		t.Errorf("no windows_exporter service waits for the kubelet's certificate:\n%s", joined)
	}
	for _, kind := range []string{"kubelet", "kube-proxy", "cni", "containerd", "windows_exporter"} {
		if files, _ := filepath.Glob(filepath.Join(out, "configs", kind, "*.cases")); len(files) == 0 {
			t.Errorf("no %s configuration written", kind)
		}
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if data, err := os.ReadFile(filepath.Join(out, "windows_exporter-tls", f)); err != nil || !strings.Contains(string(data), "-----BEGIN ") {
			t.Errorf("windows_exporter's test %s: %v", f, err)
		}
	}
	bad, err := os.ReadFile(filepath.Join(out, "negative", "kubelet-logtostderr.cmd"))
	if err != nil || !strings.HasSuffix(string(bad), "\x00--logtostderr=false") || !strings.HasPrefix(string(bad), `C:\k\winnode-service.exe`+"\x00--name\x00"+plan.KubeletService) {
		t.Errorf("negative case %q, %v", bad, err)
	}
	bad, err = os.ReadFile(filepath.Join(out, "negative", "csi-proxy-unknown.cmd"))
	if err != nil || !strings.HasSuffix(string(bad), "\x00-kubelet-dir\x00C:\\var\\lib\\kubelet") {
		t.Errorf("negative case %q, %v", bad, err)
	}
}
