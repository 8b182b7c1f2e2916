package bootstrap

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	"github.com/winnode/winnode/internal/testkit"
)

func clusterInfoKubeconfig(t testing.TB, clusters map[string]*clientcmdapi.Cluster) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters = clusters
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBootstrapKubeconfig(t *testing.T) {
	ca := testkit.SelfSignedCA(t)
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef", Instance: "wi-1"}
	out, err := BootstrapKubeconfig(ClusterInfo{Server: "https://10.0.0.1:6443", CAData: ca}, tok)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(out)
	if err != nil {
		t.Fatalf("the rendered kubeconfig does not load: %v", err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://10.0.0.1:6443" || rc.BearerToken != "abcdef.0123456789abcdef" || string(rc.CAData) != string(ca) {
		t.Errorf("kubeconfig gives host %q token %q, CA equal %v", rc.Host, rc.BearerToken, string(rc.CAData) == string(ca))
	}

	if _, err := BootstrapKubeconfig(ClusterInfo{Server: "https://x"}, tok); err == nil {
		t.Error("no error without a CA")
	}
	if _, err := BootstrapKubeconfig(ClusterInfo{Server: "https://x", CAData: ca}, Token{ID: "abcdef"}); err == nil {
		t.Error("no error without a token secret")
	}
}

func TestTokenStringHidesSecret(t *testing.T) {
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	for _, s := range []string{tok.String(), tok.SecretName(), Username(tok.ID)} {
		if strings.Contains(s, tok.Secret) {
			t.Errorf("%q shows the token secret", s)
		}
	}
	if tok.Value() != "abcdef.0123456789abcdef" {
		t.Errorf("Value() = %q", tok.Value())
	}
	if tok.SecretName() != "bootstrap-token-abcdef" || Username(tok.ID) != "system:bootstrap:abcdef" {
		t.Errorf("SecretName %q Username %q", tok.SecretName(), Username(tok.ID))
	}
}

func TestTokenIDFromUsername(t *testing.T) {
	for _, tc := range []struct {
		user, id string
		ok       bool
	}{
		{"system:bootstrap:abcdef", "abcdef", true},
		{"system:bootstrap:abc123", "abc123", true},
		{"system:bootstrap:", "", false},
		{"system:bootstrap:ABCDEF", "", false},
		{"system:bootstrap:abcdefg", "", false},
		{"system:bootstrap:abc", "", false},
		{"system:node:abcdef", "", false},
		{"abcdef", "", false},
		{"", "", false},
		{"system:bootstrappers:abcdef", "", false},
	} {
		id, ok := TokenIDFromUsername(tc.user)
		if id != tc.id || ok != tc.ok {
			t.Errorf("TokenIDFromUsername(%q) = %q, %v; want %q, %v", tc.user, id, ok, tc.id, tc.ok)
		}
		if ok && Username(id) != tc.user {
			t.Errorf("Username(%q) = %q, want %q", id, Username(id), tc.user)
		}
	}
}

func TestParseClusterInfo(t *testing.T) {
	ca := testkit.SelfSignedCA(t)
	good := clusterInfoKubeconfig(t, map[string]*clientcmdapi.Cluster{"": {Server: "https://127.0.0.1:6443", CertificateAuthorityData: ca}})
	ci, err := ParseClusterInfo(good)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Server != "https://127.0.0.1:6443" || string(ci.CAData) != string(ca) {
		t.Errorf("ParseClusterInfo = %+v", ci)
	}
	if _, err := certutil.ParseCertsPEM(ci.CAData); err != nil {
		t.Error(err)
	}

	for name, data := range map[string][]byte{
		"empty":         nil,
		"not yaml":      []byte("{{{"),
		"no cluster":    clusterInfoKubeconfig(t, map[string]*clientcmdapi.Cluster{}),
		"two clusters":  clusterInfoKubeconfig(t, map[string]*clientcmdapi.Cluster{"a": {Server: "https://a", CertificateAuthorityData: ca}, "b": {Server: "https://b", CertificateAuthorityData: ca}}),
		"no server":     clusterInfoKubeconfig(t, map[string]*clientcmdapi.Cluster{"": {CertificateAuthorityData: ca}}),
		"no CA":         clusterInfoKubeconfig(t, map[string]*clientcmdapi.Cluster{"": {Server: "https://a"}}),
		"CA not a cert": clusterInfoKubeconfig(t, map[string]*clientcmdapi.Cluster{"": {Server: "https://a", CertificateAuthorityData: []byte("nope")}}),
	} {
		if ci, err := ParseClusterInfo(data); err == nil {
			t.Errorf("%s: ParseClusterInfo accepted it: %+v", name, ci)
		}
	}
}

// FuzzParseClusterInfo: cluster-info is read from the cluster, outside input;
// whatever it holds, parsing returns a usable result or an error.
func FuzzParseClusterInfo(f *testing.F) {
	ca := testkit.SelfSignedCA(f)
	f.Add(clusterInfoKubeconfig(f, map[string]*clientcmdapi.Cluster{"": {Server: "https://127.0.0.1:6443", CertificateAuthorityData: ca}}))
	f.Add(clusterInfoKubeconfig(f, map[string]*clientcmdapi.Cluster{"": {Server: "https://a"}}))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: 'https://x', certificate-authority-data: 'AAAA'}}]\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		ci, err := ParseClusterInfo(data)
		if err != nil {
			return
		}
		if ci.Server == "" || len(ci.CAData) == 0 {
			t.Fatalf("accepted cluster info without server or CA: %+v", ci)
		}
		if _, err := certutil.ParseCertsPEM(ci.CAData); err != nil {
			t.Fatalf("accepted CA data that is not a PEM certificate: %v", err)
		}
	})
}
