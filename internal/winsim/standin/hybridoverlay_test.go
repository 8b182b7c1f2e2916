package standin

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/winnode/winnode/internal/testenv"
)

// The stand-in takes the command line winnode's plan gives the real
// program (and the Windows Machine Config Operator's, with "=" and a
// single dash as Go's flag package allows), and refuses what the real
// program refuses.
func TestHybridOverlayFlags(t *testing.T) {
	f, err := parseHybridOverlayFlags([]string{"--node", "win-1", "--k8s-kubeconfig", `C:\k\kubeconfig`, "--windows-service", "--logfile", `C:\var\log\hybrid-overlay\hybrid-overlay.log`})
	if err != nil || f.node != "win-1" || f.kubeconfig != `C:\k\kubeconfig` || !f.windowsService || f.logFile != `C:\var\log\hybrid-overlay\hybrid-overlay.log` || f.vxlanPort != 4789 {
		t.Errorf("winnode's flags: %+v, %v", f, err)
	}
	if f, err := parseHybridOverlayFlags([]string{"-node=win-2", "--hybrid-overlay-vxlan-port=9898"}); err != nil || f.node != "win-2" || f.vxlanPort != 9898 {
		t.Errorf("-flag=value forms: %+v, %v", f, err)
	}
	for _, args := range [][]string{{"--nodename", "x"}, {"--node"}, {"--node", "x", "extra"}} {
		if _, err := parseHybridOverlayFlags(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	if _, err := parseHybridOverlayFlags([]string{"--bogus"}); err == nil || !strings.Contains(err.Error(), "flag provided but not defined: -bogus") {
		t.Errorf("an unknown flag: %v, want urfave/cli's (Go flag's) message", err)
	}
	if err := hybridOverlayNode(context.Background(), newLogger("hybrid-overlay-node"), &hybridOverlayFlags{}); err == nil || err.Error() != "missing node name; use the 'node' flag to provide one" {
		t.Errorf("without --node: %v", err)
	}
}

// As the real program, the stand-in exits at its start without its
// kubeconfig or without its registered Node (it does not wait for them):
// what winnode's plan waits for before it starts it.
func TestHybridOverlayExitsWithoutItsNode(t *testing.T) {
	ctx := context.Background()
	log := newLogger("hybrid-overlay-node")
	f := &hybridOverlayFlags{node: "win-ho-unregistered", kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if err := hybridOverlayNode(ctx, log, f); err == nil || !strings.Contains(err.Error(), "reading kubeconfig") {
		t.Errorf("without its kubeconfig: %v", err)
	}
	kubeconfig, err := testenv.Get(t).UserKubeconfig("system:node:"+f.node, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	f.kubeconfig = kubeconfig
	if err := hybridOverlayNode(ctx, log, f); !apierrors.IsNotFound(err) {
		t.Errorf("without its Node: %v, want the API server's NotFound", err)
	}
}
