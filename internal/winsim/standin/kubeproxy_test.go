package standin

import (
	"strings"
	"testing"
)

func TestKubeProxyValidation(t *testing.T) {
	kc := writeTemp(t, "kubeconfig", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: x\ncurrent-context: c\n")
	if err := validateKubeProxy("", kc, "", "kernelspace"); err != nil {
		t.Errorf("a Windows kube-proxy command line: %v", err)
	}
	cfg := writeTemp(t, "kp.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: kernelspace\nclientConnection:\n  kubeconfig: "+kc+"\n")
	if err := validateKubeProxy(cfg, "", "", ""); err != nil {
		t.Errorf("a Windows kube-proxy configuration file: %v", err)
	}
	for _, tc := range []struct{ config, kubeconfig, mode, want string }{
		{"", kc, "iptables", "only kernelspace"},
		{"", "", "", "neither --kubeconfig nor --master"},
		{"", kc + ".missing", "", "reading kubeconfig"},
		{writeTemp(t, "bad.yaml", "apiVersion: v1\nkind: Pod\n"), kc, "", "KubeProxyConfiguration"},
	} {
		err := validateKubeProxy(tc.config, tc.kubeconfig, "", tc.mode)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want it to mention %q", tc, err, tc.want)
		}
	}
}
