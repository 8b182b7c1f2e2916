package openshift

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"
)

func machineConfig(name, raw string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}}}
}

func b64(s string) string { return "data:;base64," + base64.StdEncoding.EncodeToString([]byte(s)) }

// testCA is a real self-signed CA (the kubeconfig's
// certificate-authority-data must parse).
var testCA = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "test-ca"}, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
}()

// worker is a rendered worker config of spec 3.4.0, with the given kubelet
// flags and extra files.
func worker(flags string, files ...string) string {
	unit := `[Service]\nEnvironmentFile=-/etc/kubernetes/kubelet-env\nExecStart=/usr/local/bin/kubenswrapper /usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf ` + flags + ` --v=${KUBELET_LOG_LEVEL}\n`
	return `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + strings.Join(files, ",") + `]},
	"systemd":{"units":[{"name":"kubelet.service","contents":"` + unit + `"}]}}`
}

func file(path, source string) string {
	return `{"path":"` + path + `","contents":{"source":"` + source + `"}}`
}

func TestParseRenderedWorker(t *testing.T) {
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: https://api-int.example.test:6443\n    certificate-authority-data: " +
		base64.StdEncoding.EncodeToString([]byte(testCA)) + "\nusers:\n- name: kubelet\n  user:\n    token: secret-node-bootstrapper-token\n"
	raw := worker(`--cloud-provider=external --cloud-config=/etc/kubernetes/cloud.conf`,
		file("/etc/kubernetes/kubeconfig", b64(kubeconfig)),
		file("/etc/kubernetes/kubelet.conf", b64(`{"kind":"KubeletConfiguration","clusterDNS":["172.30.0.10"],"clusterDomain":"cluster.local"}`)),
		file("/etc/kubernetes/cloud.conf", b64("[Global]\nvsphere = yes\n")))
	w, err := ParseRenderedWorker(machineConfig("rendered-worker-abc", raw))
	if err != nil {
		t.Fatal(err)
	}
	if w.CloudProvider != "external" || string(w.CloudConfig) != "[Global]\nvsphere = yes\n" {
		t.Errorf("cloud provider %q, config %q", w.CloudProvider, w.CloudConfig)
	}
	if len(w.ClusterDNS) != 1 || w.ClusterDNS[0] != "172.30.0.10" || w.ClusterDomain != "cluster.local" {
		t.Errorf("DNS %v %q", w.ClusterDNS, w.ClusterDomain)
	}
	if string(w.CAData) != testCA {
		t.Errorf("CA %q", w.CAData)
	}

	// Without a kubeconfig (the Machine Config Server adds it when it
	// serves the config) or a kubelet configuration: no CA, no DNS; Load
	// takes them from elsewhere.
	w, err = ParseRenderedWorker(machineConfig("rendered-worker-abc", worker(`--cloud-provider=`)))
	if err != nil {
		t.Fatal(err)
	}
	if w.CAData != nil || w.ClusterDNS != nil || w.CloudProvider != "" {
		t.Errorf("facts from nowhere: %+v", w)
	}
}

// Garbled or unusable configs: an error that names the MachineConfig and
// what is wrong, never the bootstrap token.
func TestParseRenderedWorkerErrors(t *testing.T) {
	cases := []struct{ name, raw, want string }{
		{"not JSON", `{"ignition":`, "not a JSON Ignition config"},
		{"not Ignition", `{"kind":"Config"}`, "ignition.version is missing"},
		{"unsupported spec", `{"ignition":{"version":"1.0.0"}}`, `spec version "1.0.0" is not supported`},
		{"no kubelet unit", `{"ignition":{"version":"3.4.0"}}`, "no kubelet.service"},
		{"built-in cloud provider", worker(`--cloud-provider=aws`), "--cloud-provider=aws is a built-in cloud provider"},
		{"cloud config missing", worker(`--cloud-config=/etc/kubernetes/cloud.conf`), "names /etc/kubernetes/cloud.conf, which the config does not carry"},
		{"remote cloud config", worker(`--cloud-config=/etc/kubernetes/cloud.conf`, file("/etc/kubernetes/cloud.conf", "https://x.test/c?sig=secret")), "only data: URLs"},
		{"bad kubelet config", worker(``, file("/etc/kubernetes/kubelet.conf", b64(`clusterDNS: [dns.example]`))), `clusterDNS "dns.example" is not an IP address`},
		{"kubeconfig garbled", worker(``, file("/etc/kubernetes/kubeconfig", b64("{{{ token: secret-node-bootstrapper-token"))), "/etc/kubernetes/kubeconfig: not a kubeconfig"},
		{"kubeconfig without CA", worker(``, file("/etc/kubernetes/kubeconfig", b64("apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: https://x\nusers:\n- name: u\n  user:\n    token: secret-node-bootstrapper-token\n"))), "has no certificate-authority-data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRenderedWorker(machineConfig("rendered-worker-0123", tc.raw))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "MachineConfig rendered-worker-0123: spec.config: ") {
				t.Fatalf("error %v, want it to name the MachineConfig and contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks a secret: %v", err)
			}
		})
	}
}

func TestNewestRenderedWorker(t *testing.T) {
	at := func(name string, sec int, raw string) mcfgv1.MachineConfig {
		mc := machineConfig(name, raw)
		mc.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+sec), 0))
		return *mc
	}
	mcs := []mcfgv1.MachineConfig{
		at("rendered-worker-old", 1, "{}"),
		at("rendered-master-newest", 9, "{}"),
		at("00-worker", 8, "{}"),
		at("rendered-worker-b", 5, "{}"),
		at("rendered-worker-a", 5, "{}"),
		at("rendered-worker-empty", 7, ""),
	}
	if got := NewestRenderedWorker(mcs); got == nil || got.Name != "rendered-worker-b" {
		t.Fatalf("newest %v, want rendered-worker-b (the newest rendered worker with a config; ties by name)", got)
	}
	if got := NewestRenderedWorker(mcs[1:3]); got != nil {
		t.Fatalf("no rendered worker, got %s", got.Name)
	}
}

func TestTenthAddress(t *testing.T) {
	for in, want := range map[string]string{"172.30.0.0/16": "172.30.0.10", "10.96.0.0/12": "10.96.0.10", "fd02::/112": "fd02::a"} {
		if got, err := tenthAddress(in); err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	if _, err := tenthAddress("10.0.0.0/29"); err == nil {
		t.Error("a /29 has no tenth address")
	}
}

// FuzzParseRenderedWorker: whatever a MachineConfig's spec.config holds,
// the parser returns facts or an error naming the MachineConfig; it never
// panics.
func FuzzParseRenderedWorker(f *testing.F) {
	for _, v := range []string{"3.1.0", "3.4.0", "3.5.0", "2.2.0"} {
		data, err := os.ReadFile(filepath.Join("..", "ignition", "testdata", "worker-"+v+".ign"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(worker(`--cloud-provider=external`, file("/etc/kubernetes/kubelet.conf", b64(`clusterDNS: ["10.0.0.10"]`)))))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseRenderedWorker(machineConfig("rendered-worker-fuzz", string(data)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "MachineConfig rendered-worker-fuzz: ") {
				t.Fatalf("error does not name the MachineConfig: %v", err)
			}
			return
		}
		if w.CloudProvider != "" && w.CloudProvider != "external" {
			t.Fatalf("accepted cloud provider %q", w.CloudProvider)
		}
	})
}
