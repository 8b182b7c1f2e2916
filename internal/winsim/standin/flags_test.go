package standin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestRecordedFlagsMatchThePayload: the lists the stand-ins read are the
// ones the payload build recorded from the real programs' --help. After a
// new Kubernetes or flannel version: hack/payload/update-standin-flags.sh.
func TestRecordedFlagsMatchThePayload(t *testing.T) {
	dir := os.Getenv("WINNODE_PAYLOAD_DIR")
	if dir == "" {
		t.Skip("WINNODE_PAYLOAD_DIR is not set: no built payload to compare the recorded flag lists with (make payload)")
	}
	for _, program := range []string{Kubelet, KubeProxy, Flanneld, CSIProxy, Containerd, WindowsExporter} {
		built, err := os.ReadFile(filepath.Join(dir, "flags", program+".txt"))
		if err != nil {
			t.Errorf("the payload has no flag list for %s (rebuild it with make payload): %v", program, err)
			continue
		}
		committed, err := recordedFlags.ReadFile("flags/" + program + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		if string(built) != string(committed) {
			t.Errorf("internal/winsim/standin/flags/%s.txt differs from the payload's %s/flags/%s.txt: run hack/payload/update-standin-flags.sh", program, dir, program)
		}
	}
}

// TestStandinFlagsAreRecorded: every flag a stand-in interprets is one the
// real program has, with the same kind, so that the stand-in accepts
// exactly what the real program accepts.
func TestStandinFlagsAreRecorded(t *testing.T) {
	if _, _, err := kubeProxyFlags(); err != nil {
		t.Error(err)
	}
	if _, err := kubeletFlagSet(&kubeletFlags{}); err != nil {
		t.Error(err)
	}
	if _, err := parseCSIProxyFlags(nil); err != nil {
		t.Error(err)
	}
	if _, err := flanneldFlagSet(&flanneldFlags{}); err != nil {
		t.Error(err)
	}
	own := pflag.NewFlagSet("x", pflag.ContinueOnError)
	own.Bool("logtostderr", true, "removed in Kubernetes v1.26")
	if _, err := strictPFlags(KubeProxy, own); err == nil || !strings.Contains(err.Error(), "--logtostderr (the real kube-proxy has no such flag)") {
		t.Errorf("a stand-in flag the real program lacks: %v", err)
	}
}

// The stand-ins refuse what the real programs refuse, with their words,
// and accept every flag the real programs accept, simulated or not.
func TestStandinsRefuseUnknownFlags(t *testing.T) {
	_, fs, err := kubeProxyFlags()
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--config=C:\\k\\kube-proxy.yaml", "--ipvs-strict-arp", "--conntrack-min", "5", "--v=2", "--version"}); err != nil {
		t.Errorf("kube-proxy flags the real one accepts: %v", err)
	}
	_, fs, _ = kubeProxyFlags()
	if err := fs.Parse([]string{"--logtostderr=false"}); err == nil || err.Error() != "unknown flag: --logtostderr" {
		t.Errorf("kube-proxy --logtostderr: %v, want cobra's \"unknown flag: --logtostderr\"", err)
	}
}

// flanneld parses with Go's flag package: -name and --name, and its
// refusal reads "flag provided but not defined: -x"; it then prints its
// usage and exits 0, as flannel's main.go does.
func TestFlanneldRefusesUnknownFlags(t *testing.T) {
	if _, err := parseFlanneldFlags([]string{"-kube-subnet-mgr", "--kubeconfig-file=C:\\k\\kubeconfig", "--etcd-prefix", "/x", "--v=2"}); err != nil {
		t.Errorf("flanneld flags the real one accepts: %v", err)
	}
	_, err := parseFlanneldFlags([]string{"--logtostderr=false"})
	if err == nil || err.Error() != "flag provided but not defined: -logtostderr" {
		t.Errorf("flanneld --logtostderr: %v, want Go's \"flag provided but not defined: -logtostderr\"", err)
	}
	if code := Main("flanneld.exe", []string{"--logtostderr=false"}); code != 0 {
		t.Errorf("flanneld with an unknown flag: exit %d, want 0 as the real one (its usage exits 0)", code)
	}
}
