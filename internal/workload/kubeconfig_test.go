package workload

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig is a kubeconfig of one context, the cluster and user as
// changed by edit.
func kubeconfig(t testing.TB, edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cl := &clientcmdapi.Cluster{Server: "https://203.0.113.10:6443", CertificateAuthorityData: []byte("-----BEGIN CERTIFICATE-----\n")}
	u := &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	if edit != nil {
		edit(cl, u)
	}
	cfg.Clusters["w"], cfg.AuthInfos["admin"] = cl, u
	cfg.Contexts["admin@w"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "admin"}
	cfg.CurrentContext = "admin@w"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A kubeconfig with inline credentials is used as it is; one that would
// make the operator run a program, read one of its files, skip TLS checks
// or use a proxy is refused, naming what.
func TestParseKubeconfig(t *testing.T) {
	cfg, err := ParseKubeconfig(kubeconfig(t, nil))
	if err != nil {
		t.Fatalf("a kubeconfig with inline credentials refused: %v", err)
	}
	if cfg.Host != "https://203.0.113.10:6443" || string(cfg.CertData) != "cert" || len(cfg.CAData) == 0 {
		t.Errorf("config %s, cert %q, CA %q", cfg.Host, cfg.CertData, cfg.CAData)
	}
	token, err := ParseKubeconfig(kubeconfig(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, "abc.def"
	}))
	if err != nil || token.BearerToken != "abc.def" {
		t.Errorf("a token kubeconfig: %v, token %q", err, token.BearerToken)
	}
	for _, tc := range []struct {
		name string
		edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		want string
	}{
		{"exec", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1"}
		}, "exec (/bin/sh) would run a program"},
		{"auth provider", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}, `auth-provider "oidc"`},
		{"token file", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, "names a file"},
		{"certificate file", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.ClientCertificate = "/etc/cert" }, "names a file"},
		{"CA file", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.CertificateAuthority = "/etc/ca" }, "certificate-authority names a file"},
		{"no CA", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.CertificateAuthorityData = nil }, "no certificate-authority-data"},
		{"insecure", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.InsecureSkipTLSVerify = true }, "insecure-skip-tls-verify"},
		{"proxy", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.ProxyURL = "http://proxy:3128" }, "proxy-url"},
		{"http", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "http://203.0.113.10:8080" }, "not an https URL"},
		{"impersonation", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Impersonate = "system:admin" }, "impersonates"},
		{"no credentials", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.ClientKeyData = nil }, "no credentials"},
	} {
		_, err := ParseKubeconfig(kubeconfig(t, tc.edit))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	for data, want := range map[string]string{
		"":                               "empty",
		"{{{":                            "not a kubeconfig",
		"apiVersion: v1\nkind: Config\n": "no current context",
	} {
		if _, err := ParseKubeconfig([]byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", data, err, want)
		}
	}
}

// Whatever a Secret holds, ParseKubeconfig answers a config or an error,
// and never a config that runs a program or reads a file.
func FuzzParseKubeconfig(f *testing.F) {
	f.Add(kubeconfig(f, nil))
	f.Add(kubeconfig(f, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "x"}
	}))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters: []\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseKubeconfig(data)
		if err != nil {
			return
		}
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" || cfg.Insecure {
			t.Errorf("accepted a kubeconfig that runs, reads or trusts blindly: %+v", cfg)
		}
	})
}
