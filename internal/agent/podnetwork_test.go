package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/plan"
)

// Garbled pod network settings are refused naming the file, before
// anything is read from the cluster.
func TestPodNetworkRefusesGarbledSettings(t *testing.T) {
	root := tempDir(t)
	a := &Agent{Platform: rootPlatform{root: root}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err := a.PodNetwork(context.Background(), PodNetworkOptions{})
	if pe := (*plan.Error)(nil); !errors.As(err, &pe) || pe.File != plan.PodNetworkPath || !strings.Contains(pe.Message, "reading") {
		t.Errorf("no settings file: %v", err)
	}
	path := filepath.Join(root, "k", "pod-network.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"nodeName": "win-1", "network": {"mode": "flannel"`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = a.PodNetwork(context.Background(), PodNetworkOptions{})
	if pe := (*plan.Error)(nil); !errors.As(err, &pe) || pe.Code != plan.ErrPlanInvalid || pe.File != plan.PodNetworkPath {
		t.Errorf("garbled settings: %v", err)
	}
}

// Without the node's credentials (the kubelet has not joined) it waits,
// saying so, until it is stopped; then it fails naming what it waited for.
func TestPodNetworkWaitsForTheNode(t *testing.T) {
	root := tempDir(t)
	var logs strings.Builder
	a := &Agent{Platform: rootPlatform{root: root}, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	path := filepath.Join(root, "k", "pod-network.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"nodeName":"win-1","network":{"mode":"flannel","clusterCIDR":"10.244.0.0/16","serviceCIDR":"10.96.0.0/12","networkName":"vxlan0","vni":4096,"port":4789}}`
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel) // the service stopped
	_, err := a.PodNetwork(ctx, PodNetworkOptions{PollInterval: 10 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "has not written "+plan.KubeconfigPath) || !strings.Contains(logs.String(), "msg=waiting") {
		t.Errorf("stopped while waiting: %v; log:\n%s", err, logs.String())
	}
	if _, err := os.Stat(filepath.Join(root, "k", "kube-proxy.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kube-proxy.yaml written without the node's subnet: %v", err)
	}
}

// Each file is written only when its content differs.
func TestWriteIfChanged(t *testing.T) {
	root := tempDir(t)
	a := &Agent{Platform: rootPlatform{root: root}}
	if err := os.MkdirAll(filepath.Join(root, "k"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := plan.GeneratedFile{HostPath: plan.KubeProxyConfigPath, Content: []byte("a")}
	for i, want := range []plan.FileAction{plan.FileInstalled, plan.FileUnchanged} {
		if got, err := a.writeIfChanged(f); err != nil || got != want {
			t.Errorf("write %d: %s, %v; want %s", i, got, err, want)
		}
	}
	f.Content = []byte("b")
	if got, err := a.writeIfChanged(f); err != nil || got != plan.FileInstalled {
		t.Errorf("changed content: %s, %v", got, err)
	}
}
