package joinconfig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/plan"
)

// The secret half of the test token: it must never be printed.
const tokenSecret = "0123456789abcdef"

var testCAPEM = func() []byte {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(4e9, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}()

func validConfig() *Config {
	return &Config{
		SchemaVersion:   SchemaVersion,
		OperatorVersion: "v0.5.2",
		AgentVersions:   SupportedAgents("v0.5.2"),
		Machine:         "capi-clusters/windows-md-0-x2vzq",
		NodeName:        "windows-gyok56",
		Cluster: Cluster{Server: "https://10.0.0.1:6443", CAData: testCAPEM,
			ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
		Network: Network{Mode: plan.NetworkFlannel, ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12",
			NetworkName: "vxlan0", VNI: 4096, Port: 4789},
		BootstrapToken: Secret("abcdef." + tokenSecret),
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	c := validConfig()
	data, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Decode(Encode(c)): %v", err)
	}
	again, _ := Encode(back)
	if !bytes.Equal(data, again) {
		t.Errorf("round trip changed the config:\n%s\n%s", data, again)
	}
	if back.BootstrapToken.Reveal() != "abcdef."+tokenSecret {
		t.Errorf("the token did not travel")
	}
}

// TestSecretIsNeverPrinted: fmt and slog show the config without its
// token, in every form a log line may take.
func TestSecretIsNeverPrinted(t *testing.T) {
	c := validConfig()
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("join config", "config", c, "token", c.BootstrapToken)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("join config", "token", c.BootstrapToken)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", c.BootstrapToken), fmt.Sprintf("%v", c.BootstrapToken), logged.String()} {
		if strings.Contains(s, tokenSecret) {
			t.Errorf("the token's secret is printed: %s", s)
		}
	}
	// A malformed token is not echoed in the error either.
	c.BootstrapToken = Secret("not-a-token-" + tokenSecret)
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), tokenSecret) {
		t.Errorf("Validate: %v; want an error that does not show the value", err)
	}
}

func TestDecodeNamesTheField(t *testing.T) {
	good, err := Encode(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return string(out)
	}
	cluster := func(m map[string]any) map[string]any { return m["cluster"].(map[string]any) }
	for _, tc := range []struct{ name, doc, want string }{
		{"schema", edit(func(m map[string]any) { m["schemaVersion"] = "winnode.io/join/v9" }), "schemaVersion"},
		{"unknown field", edit(func(m map[string]any) { m["extra"] = 1 }), `unknown field "extra"`},
		{"trailing", string(good) + "{}", "after the JSON document"},
		{"server", edit(func(m map[string]any) { cluster(m)["server"] = "http://10.0.0.1:6443" }), "cluster.server"},
		{"ca", edit(func(m map[string]any) { cluster(m)["caData"] = "bm90IGEgY2VydA==" }), "cluster.caData"},
		{"dns", edit(func(m map[string]any) { cluster(m)["clusterDNS"] = []string{"ten"} }), "cluster.clusterDNS[0]"},
		{"cloud", edit(func(m map[string]any) { cluster(m)["cloudProvider"] = "aws" }), "cluster.cloudProvider"},
		{"node name", edit(func(m map[string]any) { m["nodeName"] = "Windows_1" }), "nodeName"},
		{"node name long", edit(func(m map[string]any) { m["nodeName"] = "abcdefghijklmnop" }), "nodeName"},
		{"machine", edit(func(m map[string]any) { m["machine"] = "no-namespace" }), "machine"},
		{"network", edit(func(m map[string]any) { m["network"].(map[string]any)["vni"] = 1 }), "network"},
		{"token", edit(func(m map[string]any) { m["bootstrapToken"] = "abc" }), "bootstrapToken"},
		{"versions", edit(func(m map[string]any) { m["agentVersions"] = map[string]any{"oldest": "0.4", "newest": "v0.5"} }), "agentVersions: oldest"},
		{"versions both", edit(func(m map[string]any) {
			m["agentVersions"] = map[string]any{"oldest": "v0.4", "newest": "v0.5", "exact": "dev"}
		}), "agentVersions"},
		{"big", strings.Repeat(" ", maxBytes+1), "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode: %v; want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestSupportedAgents(t *testing.T) {
	for _, tc := range []struct {
		operator string
		want     AgentVersions
		ok, bad  []string
	}{
		{"v0.5.2", AgentVersions{Oldest: "v0.4", Newest: "v0.5"},
			[]string{"v0.4.0", "v0.4.9", "v0.5.0-rc.1", "v0.5.7", "v0.5.2-3-gabc123-dirty"},
			[]string{"v0.3.9", "v0.6.0", "v1.5.0", "dev", "0.5", ""}},
		{"v1.0.0", AgentVersions{Oldest: "v1.0", Newest: "v1.0"}, []string{"v1.0.3"}, []string{"v0.9.0", "v1.1.0"}},
		{"v0.0.0-e2e", AgentVersions{Oldest: "v0.0", Newest: "v0.0"}, []string{"v0.0.0-e2e", "v0.0.1"}, []string{"dev", "v0.1.0"}},
		{"dev", AgentVersions{Exact: "dev"}, []string{"dev"}, []string{"v0.0.0", "dev2"}},
		{"62d0134-dirty", AgentVersions{Exact: "62d0134-dirty"}, []string{"62d0134-dirty"}, []string{"62d0134"}},
	} {
		got := SupportedAgents(tc.operator)
		if got != tc.want {
			t.Errorf("SupportedAgents(%q) = %+v; want %+v", tc.operator, got, tc.want)
		}
		for _, v := range tc.ok {
			if err := got.Check(v); err != nil {
				t.Errorf("operator %s: agent %s refused: %v", tc.operator, v, err)
			}
		}
		for _, v := range tc.bad {
			err := got.Check(v)
			if err == nil || !strings.Contains(err.Error(), got.String()) {
				t.Errorf("operator %s: agent %q: %v; want a refusal naming the range %s", tc.operator, v, err, got)
			}
		}
	}
}
