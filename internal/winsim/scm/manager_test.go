package scm

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
)

func newTestManager(t *testing.T) *Manager {
	t.Helper()
	dir := t.TempDir()
	m, err := NewManager(ManagerOptions{StateFile: filepath.Join(dir, "services.json")})
	if err != nil {
		t.Fatal(err)
	}
	m.opts.Host.Root = dir
	return m
}

func TestCreateValidates(t *testing.T) {
	m := newTestManager(t)
	for _, c := range []simscm.Config{
		{Name: "", BinaryPathName: "x", StartType: plan.StartAuto},
		{Name: `a\b`, BinaryPathName: "x", StartType: plan.StartAuto},
		{Name: "a", BinaryPathName: " ", StartType: plan.StartAuto},
		{Name: "a", BinaryPathName: "x", StartType: "sometimes"},
		{Name: "a", BinaryPathName: "x", StartType: plan.StartAuto, RecoveryActions: []simscm.Action{{Type: "reboot"}}},
		{Name: "a", BinaryPathName: "x", StartType: plan.StartAuto, Dependencies: []string{"A"}},
		{Name: "a", BinaryPathName: "x", StartType: plan.StartAuto, Environment: []string{"NOEQUALS"}},
	} {
		if err := m.Create(c); !errors.Is(err, simscm.ErrInvalid) {
			t.Errorf("Create(%+v) = %v, want simscm.ErrInvalid", c, err)
		}
	}
}

// The configuration survives a restart of the manager (the simulated
// registry).
func TestServicesPersist(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "services.json")
	m, _ := NewManager(ManagerOptions{StateFile: file})
	cfg := simscm.Config{Name: "kubelet", BinaryPathName: `C:\k\kubelet.exe --v=2`, StartType: plan.StartAuto, Dependencies: []string{"containerd"}}
	if err := m.Create(cfg); err != nil {
		t.Fatal(err)
	}
	m2, err := NewManager(ManagerOptions{StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m2.Get("KUBELET")
	if err != nil || s.Config.BinaryPathName != cfg.BinaryPathName || s.Status.State != simscm.Stopped {
		t.Errorf("after a restart: %+v, %v", s, err)
	}
}

// FuzzCreate: whatever JSON a client sends as a service configuration, the
// manager accepts it only when valid and never panics.
func FuzzCreate(f *testing.F) {
	f.Add(`{"name":"kubelet","binaryPathName":"C:\\k\\kubelet.exe","startType":"auto","dependencies":["containerd"]}`)
	f.Add(`{"name":"x","binaryPathName":"y","startType":"manual","recoveryActions":[{"type":"restart","delay":1000}],"resetPeriod":5}`)
	f.Add(`{"name":"","startType":"disabled"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var c simscm.Config
		if json.Unmarshal([]byte(body), &c) != nil {
			return
		}
		m := newTestManager(t)
		err := m.Create(c)
		if err == nil {
			if c.Name == "" || strings.TrimSpace(c.BinaryPathName) == "" {
				t.Fatalf("accepted %+v", c)
			}
			if _, err := m.Get(c.Name); err != nil {
				t.Fatalf("created %q but Get says %v", c.Name, err)
			}
		}
	})
}
