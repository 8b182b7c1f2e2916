package ignition

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkerFromEachSpec(t *testing.T) {
	for _, v := range []string{"2.2.0", "2.4.0", "3.1.0", "3.4.0", "3.5.0"} {
		t.Run(v, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "worker-"+v+".ign"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.Version != v {
				t.Errorf("version %q, want %q", c.Version, v)
			}
			if c.Remote["/etc/motd"] != "https://example.test/motd" {
				t.Errorf("remote file not recorded: %v", c.Remote)
			}
			w, err := c.Worker()
			if err != nil {
				t.Fatalf("Worker: %v", err)
			}
			if !bytes.Contains(w.BootstrapKubeconfig, []byte("token: abcdef.0123456789abcdef")) {
				t.Errorf("kubeconfig (base64 data URL) not decoded: %q", w.BootstrapKubeconfig)
			}
			if string(w.KubeletCA) != "-----BEGIN CERTIFICATE-----\nTESTCA\n-----END CERTIFICATE-----\n" {
				t.Errorf("CA (percent-encoded data URL) = %q", w.KubeletCA)
			}
			if w.CloudProvider != "aws" || w.CloudConfigPath != "/etc/kubernetes/cloud.conf" {
				t.Errorf("cloud provider %q, config %q", w.CloudProvider, w.CloudConfigPath)
			}
			if string(w.CloudConfig) != "[Global]\nzone = us-east-1a\n" {
				t.Errorf("cloud config (gzip) = %q", w.CloudConfig)
			}
			if w.Verbosity != 4 {
				t.Errorf("verbosity %d, want 4 (from the drop-in's Environment)", w.Verbosity)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	read := func(v string) string {
		data, err := os.ReadFile(filepath.Join("testdata", "worker-"+v+".ign"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	cases := []struct {
		name, input, want string
	}{
		{"not JSON", "hello", "not a JSON Ignition config"},
		{"no version", `{"ignition":{}}`, "ignition.version is missing"},
		{"spec 2.1", `{"ignition":{"version":"2.1.0"}}`, `spec version "2.1.0" is not supported`},
		{"spec 3.6", `{"ignition":{"version":"3.6.0-experimental"}}`, `spec version "3.6.0-experimental" is not supported`},
		{"v2 wrong type", `{"ignition":{"version":"2.2.0"},"storage":{"files":"x"}}`, "ignition spec 2.2.0: field storage.files"},
		{"v2 relative path", `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"etc/x","contents":{"source":"data:,a"}}]}}`, "storage.files[0].path"},
		{"v2 other filesystem", `{"ignition":{"version":"2.4.0"},"storage":{"files":[{"filesystem":"oem","path":"/x"}]}}`, `storage.files[0].filesystem "oem"`},
		{"v2 bad data URL", `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/x","contents":{"source":"data:;base64,!!!"}}]}}`, "ignition spec 2.2.0: storage.files[0].contents (file /x): bad data: URL"},
		{"v2 bad gzip", `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/x","contents":{"source":"data:,notgzip","compression":"gzip"}}]}}`, "compression gzip"},
		{"v2 bad compression", `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/x","contents":{"source":"data:,a","compression":"xz"}}]}}`, `compression "xz"`},
		{"v3 bad hash", strings.Replace(read("3.4.0"), `"sha256-`, `"sha256-00`, 1), "verification.hash"},
		{"v3 invalid field", `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"relative"}]}}`, "ignition spec 3.4.0"},
		{"v3 wrong type", `{"ignition":{"version":"3.1.0"},"storage":{"files":"x"}}`, "ignition spec 3.1.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWorkerErrors(t *testing.T) {
	cases := []struct{ name, input, want string }{
		{"no kubeconfig", `{"ignition":{"version":"3.4.0"}}`, "storage.files has no /etc/kubernetes/kubeconfig"},
		{"remote kubeconfig", `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/kubernetes/kubeconfig","contents":{"source":"https://x.test/k?token=secret"}}]}}`, "only data: URLs"},
		{"no unit", `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/kubernetes/kubeconfig","contents":{"source":"data:,k"}},{"path":"/etc/kubernetes/kubelet-ca.crt","contents":{"source":"data:,c"}}]}}`, "no kubelet.service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Worker()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks a URL's query: %v", err)
			}
		})
	}
}

func TestGzipBombRefused(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zero := make([]byte, 1<<20)
	for i := 0; i < (maxContents>>20)+1; i++ {
		zw.Write(zero)
	}
	zw.Close()
	src := "data:;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	if _, err := decodeContents(src, "gzip", ""); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("want a size error, got %v", err)
	}
}

func TestSplitWords(t *testing.T) {
	got := splitWords(`a "b c" 'd e' f\ g  KEY="x y"`)
	want := []string{"a", "b c", "d e", "f g", "KEY=x y"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	for _, v := range []string{"2.2.0", "2.4.0", "3.1.0", "3.4.0", "3.5.0"} {
		data, err := os.ReadFile(filepath.Join("testdata", "worker-"+v+".ign"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/x","contents":{"source":"data:;base64,H4sIAAAAAAAA/w==","compression":"gzip"}}]}}`))
	f.Add([]byte(`{"ignition":{"version":"3.0.0"},"systemd":{"units":[{"name":"kubelet.service","contents":"[Service]\nExecStart=/k --v=${X}"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if !isSupported(c.Version) {
			t.Fatalf("accepted unsupported version %q", c.Version)
		}
		c.Worker() // must not panic
	})
}
