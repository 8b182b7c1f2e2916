package capibootstrap

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
)

// goldenToken is the token of the golden files: test data, no cluster's.
const goldenToken = "abcdef.0123456789abcdef"

// caPEM is a self-signed CA certificate of key.
func caPEM(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Unix(0, 0).UTC(), NotAfter: time.Unix(4e9, 0).UTC(), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// pullInput is the Pull data input of the golden files: a CA of a fixed
// Ed25519 key (its signature is deterministic), flannel.
func pullInput(t testing.TB, ca []byte, firewall []bootstrap.FirewallRule) PullInput {
	machine := "windows-workers-md-0-5f7c9d8b4-x2vzq"
	name := ComputerName("capi-clusters", machine, "", 0)
	return PullInput{
		Namespace: "capi-clusters", Machine: machine, ComputerName: name, Firewall: firewall,
		Join: &joinconfig.Config{
			SchemaVersion: joinconfig.SchemaVersion, OperatorVersion: "v0.5.2", AgentVersions: joinconfig.SupportedAgents("v0.5.2"),
			Machine: "capi-clusters/" + machine, NodeName: plan.NodeName(name),
			Cluster: joinconfig.Cluster{Server: "https://10.0.0.1:6443", CAData: ca, ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
			Network: joinconfig.Network{Mode: plan.NetworkFlannel, ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12",
				NetworkName: "vxlan0", VNI: 4096, Port: 4789},
			BootstrapToken: joinconfig.Secret(goldenToken),
		},
	}
}

func TestPullBootstrapDataGolden(t *testing.T) {
	ca := caPEM(t, ed25519.NewKeyFromSeed([]byte("winnode-capi-golden-seed-32bytes")))
	for _, tc := range []struct {
		golden   string
		firewall []bootstrap.FirewallRule
	}{
		{"pull-data.golden", nil},
		{"pull-data-firewall.golden", []bootstrap.FirewallRule{{Name: "winnode-udp-4789", Protocol: "UDP", Port: 4789}}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			data, err := PullBootstrapData(pullInput(t, ca, tc.firewall))
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, tc.golden, string(data))
		})
	}
}

// What cloudbase-init, the agent and the simulator rely on, said outside
// the golden file.
func TestPullBootstrapDataContents(t *testing.T) {
	in := pullInput(t, caPEM(t, ed25519.NewKeyFromSeed([]byte("winnode-capi-golden-seed-32bytes"))), nil)
	data, err := PullBootstrapData(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !strings.HasPrefix(s, "#ps1_sysnative\n") {
		t.Errorf("first line %q; cloudbase-init needs #ps1_sysnative", strings.SplitN(s, "\n", 2)[0])
	}
	// The ACL is set before the token is written, and the agent runs after
	// the rename and before the sentinel.
	order := []string{"Rename-Computer", "icacls.exe $joinConfig /inheritance:r", goldenToken, "& $agent join --config $joinConfig", "bootstrap-success.complete"}
	last := -1
	for k, w := range order {
		i := strings.Index(s, w)
		if i <= last {
			t.Errorf("%q is not after %q in the script", w, order[max(0, k-1)])
		}
		last = i
	}
	for _, never := range []string{"sshd", "authorized_keys", "OpenSSH", "Port = 22 "} {
		if strings.Contains(s, never) {
			t.Errorf("Pull data sets up SSH: it contains %q", never)
		}
	}
	// The join config the script carries is the one given.
	m := regexp.MustCompile(`(?m)^\$joinConfigData = @'\n(.*)\n'@$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatal("no join config here-string")
	}
	cfg, err := joinconfig.Decode(strings.NewReader(m[1]))
	if err != nil || cfg.NodeName != in.Join.NodeName || cfg.BootstrapToken.Reveal() != goldenToken {
		t.Errorf("the script's join config: %+v, %v", cfg, err)
	}
}

func TestPullBootstrapDataRefusesBadInput(t *testing.T) {
	ca := caPEM(t, ed25519.NewKeyFromSeed([]byte("winnode-capi-golden-seed-32bytes")))
	for name, edit := range map[string]func(*PullInput){
		"node name":    func(in *PullInput) { in.Join.NodeName = "other-abcdef" },
		"no join":      func(in *PullInput) { in.Join = nil },
		"bad config":   func(in *PullInput) { in.Join.Cluster.Server = "http://x" },
		"machine":      func(in *PullInput) { in.Machine = "Bad'Name" },
		"firewall":     func(in *PullInput) { in.Firewall = []bootstrap.FirewallRule{{Name: "x'y", Protocol: "TCP", Port: 1}} },
		"too big":      func(in *PullInput) { in.Join.Cluster.CAData = []byte(strings.Repeat(string(ca), 40)) },
		"computername": func(in *PullInput) { in.ComputerName = "this-name-is-too-long" },
	} {
		t.Run(name, func(t *testing.T) {
			in := pullInput(t, ca, nil)
			edit(&in)
			if data, err := PullBootstrapData(in); err == nil {
				t.Errorf("rendered %d bytes; want an error", len(data))
			} else if strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

// BenchmarkPullBootstrapDataSize reports the size of the Pull bootstrap
// data, in bytes, against the 16 KiB every infrastructure provider's user
// data takes: with a kubeadm cluster's CA (RSA 2048), and with a bundle of
// two RSA 4096 CAs (a CA being rotated), with four firewall ports.
func BenchmarkPullBootstrapDataSize(b *testing.B) {
	for _, tc := range []struct {
		name string
		bits int
		cas  int
	}{{"kubeadm-ca", 2048, 1}, {"rotated-ca-bundle", 4096, 2}} {
		b.Run(tc.name, func(b *testing.B) {
			var bundle []byte
			for range tc.cas {
				key, err := rsa.GenerateKey(rand.Reader, tc.bits)
				if err != nil {
					b.Fatal(err)
				}
				bundle = append(bundle, caPEM(b, key)...)
			}
			in := pullInput(b, bundle, []bootstrap.FirewallRule{
				{Name: "winnode-udp-4789", Protocol: "UDP", Port: 4789}, {Name: "winnode-tcp-80", Protocol: "TCP", Port: 80},
				{Name: "winnode-tcp-443", Protocol: "TCP", Port: 443}, {Name: "winnode-tcp-8080", Protocol: "TCP", Port: 8080}})
			var n int
			for b.Loop() {
				data, err := PullBootstrapData(in)
				if err != nil {
					b.Fatal(err)
				}
				n = len(data)
			}
			b.ReportMetric(float64(n), "bytes")
			b.ReportMetric(float64(n)/MaxDataBytes, "of-16KiB")
		})
	}
}
