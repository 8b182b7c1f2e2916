package standin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/simhns"
	"github.com/winnode/winnode/internal/simscm"
)

func TestKubeProxyValidation(t *testing.T) {
	kc := writeTemp(t, "kubeconfig", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: x\ncurrent-context: c\n")
	if _, err := validateKubeProxy("", proxySettings{kubeconfig: kc, mode: "kernelspace"}); err != nil {
		t.Errorf("a Windows kube-proxy command line: %v", err)
	}
	cfg := writeTemp(t, "kp.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: kernelspace\nclientConnection:\n  kubeconfig: "+kc+"\nwinkernel:\n  networkName: vxlan0\n  sourceVip: 10.244.1.2\n")
	// The file replaces the flags (but --hostname-override), as in kube-proxy.
	set, err := validateKubeProxy(cfg, proxySettings{mode: "iptables", networkName: "other", hostnameOverride: "win-1"})
	if err != nil || set.networkName != "vxlan0" || set.sourceVIP != "10.244.1.2" || set.kubeconfig != kc || set.hostnameOverride != "win-1" {
		t.Errorf("a Windows kube-proxy configuration file: %+v, %v", set, err)
	}
	for _, tc := range []struct{ config, kubeconfig, mode, want string }{
		{"", kc, "iptables", "only kernelspace"},
		{"", "", "", "neither --kubeconfig nor --master"},
		{"", kc + ".missing", "", "reading kubeconfig"},
		{writeTemp(t, "bad.yaml", "apiVersion: v1\nkind: Pod\n"), kc, "", "KubeProxyConfiguration"},
		// Started before its configuration is written (pod-network
		// writes it once the Node has its subnet): kube-proxy's Complete
		// fails to open it.
		{cfg + ".not-yet", kc, "", "failed complete: open"},
	} {
		_, err := validateKubeProxy(tc.config, proxySettings{kubeconfig: tc.kubeconfig, mode: tc.mode})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want it to mention %q", tc, err, tc.want)
		}
	}
}

func FuzzKubeProxyConfig(f *testing.F) {
	f.Add("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: kernelspace\n")
	f.Add("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n")
	f.Add("[")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := dir + "/kp.yaml"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := validateKubeProxy(p, proxySettings{master: "https://127.0.0.1:6443"})
		if err == nil && !strings.Contains(body, "KubeProxyConfiguration") {
			t.Fatalf("accepted a file that is not a KubeProxyConfiguration: %q", body)
		}
	})
}

// signalWriter says on ch that something was written.
type signalWriter struct{ ch chan struct{} }

func (w signalWriter) Write(p []byte) (int, error) {
	select {
	case w.ch <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Real kube-proxy started before its HNS network exists waits for it
// (winkernel's getNetworkInfo retries every second), then checks the
// source VIP an Overlay network needs: so does the stand-in.
func TestKubeProxyWaitsForItsNetwork(t *testing.T) {
	root := filepath.Join(t.TempDir(), "C")
	t.Setenv(simscm.EnvRoot, root)
	said := make(chan struct{}, 1)
	log := &logger{program: "kube-proxy", out: signalWriter{said}}
	done := make(chan error, 1)
	go func() { done <- checkProxyNetwork(context.Background(), log, "vxlan0", "10.244.1.2") }()
	<-said // it logged that the network is missing, and waits
	if _, err := simhns.Open(root).CreateNetwork(simhns.Network{Name: "vxlan0", Type: simhns.TypeOverlay, VNI: 4096, Port: 4789,
		Subnets: []simhns.Subnet{{AddressPrefix: "10.244.1.0/24", GatewayAddress: "10.244.1.1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("once the network exists: %v", err)
	}
	if err := checkProxyNetwork(context.Background(), log, "vxlan0", ""); err == nil || !strings.Contains(err.Error(), "source-vip flag not set") {
		t.Errorf("an Overlay network without a source VIP: %v", err)
	}
}
