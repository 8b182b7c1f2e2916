package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

func TestDesiredConfigAndDiff(t *testing.T) {
	s := &plan.Service{
		Name: "kubelet", Description: plan.ServiceDescription, Binary: `C:\Program Files\k\kubelet.exe`,
		Args: []string{"--config", `C:\k\a b.yaml`}, Dependencies: []string{"containerd"}, StartType: plan.StartAuto,
		Environment: map[string]string{"B": "2", "A": "1"},
		Recovery: plan.Recovery{
			Actions:     []plan.RecoveryAction{{Type: plan.RecoveryRestart, Delay: metav1.Duration{Duration: 1500*time.Millisecond + 7*time.Microsecond}}},
			ResetPeriod: metav1.Duration{Duration: 90*time.Second + 300*time.Millisecond},
		},
	}
	want := desiredConfig(s)
	if want.BinaryPathName != `"C:\Program Files\k\kubelet.exe" --config "C:\k\a b.yaml"` {
		t.Errorf("command line %s", want.BinaryPathName)
	}
	if strings.Join(want.Environment, ",") != "A=1,B=2" {
		t.Errorf("environment %v, want sorted", want.Environment)
	}
	if want.DisplayName != "kubelet" {
		t.Errorf("display name defaults to the name, got %q", want.DisplayName)
	}
	if want.RecoveryActions[0].Delay != 1500*time.Millisecond || want.ResetPeriod != 90*time.Second {
		t.Errorf("durations not rounded as Windows stores them: %+v %s", want.RecoveryActions, want.ResetPeriod)
	}

	have := want
	have.Dependencies = []string{"ContainerD"}
	have.Environment = []string{"B=2", "A=1"}
	if d := configDiff(have, want); d != "" {
		t.Errorf("case and order differences reported: %s", d)
	}
	cases := map[string]func(c *ServiceConfig){
		"command line": func(c *ServiceConfig) { c.BinaryPathName += " --v=2" },
		"start type":   func(c *ServiceConfig) { c.StartType = plan.StartManual },
		"dependencies": func(c *ServiceConfig) { c.Dependencies = nil },
		"environment":  func(c *ServiceConfig) { c.Environment = []string{"A=1"} },
		"recovery":     func(c *ServiceConfig) { c.ResetPeriod = time.Hour },
		"description":  func(c *ServiceConfig) { c.Description = "someone else's" },
		"displayName":  func(c *ServiceConfig) { c.DisplayName = "x" },
	}
	for field, mutate := range cases {
		h := want
		mutate(&h)
		if d := configDiff(h, want); d != field {
			t.Errorf("changing %s: diff %q", field, d)
		}
	}
	h := want
	h.RecoveryActions, h.RecoveryUnknown = nil, true
	if d := configDiff(h, want); d != "" {
		t.Errorf("recovery compared although the manager cannot report it: %s", d)
	}
}

func TestRemoveTreeKeeps(t *testing.T) {
	root := tempDir(t)
	write := func(rel string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("k/kubelet.exe")
	write("k/sub/deep/file")
	write("k/logs/kubelet.log")
	write("k/agent.exe")
	keep := []string{filepath.Join(root, "K", "LOGS"), filepath.Join(root, "k", "agent.exe")}
	if err := removeTree(filepath.Join(root, "k"), keep); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return nil
	})
	if got := strings.Join(left, " "); got != "k k/agent.exe k/logs k/logs/kubelet.log" {
		t.Errorf("left: %s", got)
	}
	if err := removeTree(filepath.Join(root, "missing"), nil); err != nil {
		t.Errorf("a missing folder: %v", err)
	}
}

func TestFailDocumentAndExitCodes(t *testing.T) {
	var out bytes.Buffer
	code := Fail(&out, &plan.Error{Code: plan.ErrFileMissing, File: `C:\k\kubelet.exe`, Message: "not staged"}, &plan.Result{Command: "apply"})
	var doc plan.ErrorDocument
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if code != ExitFailed || doc.SchemaVersion != plan.SchemaVersion || doc.Error.File != `C:\k\kubelet.exe` || doc.Result == nil {
		t.Errorf("exit %d, %s", code, out.String())
	}
	out.Reset()
	if code := Fail(&out, plan.Errorf(plan.ErrUsage, "bad flag"), nil); code != ExitUsage {
		t.Errorf("usage error exit %d", code)
	}
	out.Reset()
	Fail(&out, os.ErrPermission, nil)
	if !strings.Contains(out.String(), `"code": "Host"`) {
		t.Errorf("a plain error gets code Host: %s", out.String())
	}
}

func TestBootstrapPlanRefusesBadInput(t *testing.T) {
	a := &Agent{Platform: nil}
	for _, o := range []BootstrapOptions{
		{KubeletPath: `kubelet.exe`},
		{KubeletPath: `C:\k\kubelet.exe`, InstallDir: `k`},
		{KubeletPath: `C:\k\kubelet.exe`, NodeIP: "::1"},
		{KubeletPath: `C:\k\kubelet.exe`, ClusterDNS: "10.0.0.1,nope"},
	} {
		if _, _, err := a.bootstrapPlan(o); err == nil || !strings.Contains(err.Error(), "Usage") {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
}

// rootPlatform maps C:\ onto a folder and has nothing else (its other
// methods are nil and panic if called).
type rootPlatform struct {
	Platform
	root string
}

func (p rootPlatform) LocalPath(wp winpath.Path) (string, error) {
	return filepath.Join(append([]string{p.root}, wp.Parts...)...), nil
}

func TestLockExcludesASecondAgent(t *testing.T) {
	a := &Agent{Platform: rootPlatform{root: tempDir(t)}}
	unlock, err := a.lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.lock(); err == nil || !strings.Contains(err.Error(), "Busy") {
		t.Fatalf("second lock: %v, want Busy", err)
	}
	unlock()
	unlock2, err := a.lock()
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

// tempDir is t.TempDir, cleaned with the agent's own removeTree: the
// testing package's cleanup (os.RemoveAll) fails under Wine.
func tempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "winnode-agent-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(dir, nil) })
	return dir
}

// logTail is what info reports of a failing service's log: its last
// non-empty lines, read from the end of a file of any size.
func TestLogTail(t *testing.T) {
	path := filepath.Join(tempDir(t), "kubelet.log")
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "I1126 line %d\r\n", i)
	}
	b.WriteString("Error: failed to parse kubelet flag: unknown flag: --logtostderr\n\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logTail(path, 3)
	want := []string{"I1126 line 4998", "I1126 line 4999", "Error: failed to parse kubelet flag: unknown flag: --logtostderr"}
	if !slices.Equal(got, want) {
		t.Errorf("logTail = %q, want %q", got, want)
	}
	if got := logTail(path+".missing", 3); got != nil {
		t.Errorf("logTail of a missing file = %q", got)
	}
}
