//go:build !windows

package agent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winsim"
)

// These tests run the agent's Linux build on winsim simulated hosts, over
// SSH as the operator does. The services they install are this test binary
// copied onto the host as svc-*.exe: started under such a name it acts as a
// small service (see serviceMain) instead of running the tests.

func TestMain(m *testing.M) {
	// Started by winnode-service, its name is the Windows path (C:\k\svc-x.exe).
	name := os.Args[0][strings.LastIndexAny(os.Args[0], `/\`)+1:]
	if strings.HasPrefix(strings.ToLower(name), "svc-") {
		os.Exit(serviceMain())
	}
	testenv.Main(m) // removes the binaries testenv.Binary built
}

// serviceMain runs until SIGTERM; with WINNODE_TEST_SLOW_STOP set it takes
// that long to stop (a service that is slow to stop).
func serviceMain() int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	// A service's process answers the service control manager first, as
	// a Windows service calls StartServiceCtrlDispatcher.
	// As the child of winnode-service it is not (ErrControllerConnect).
	if err := simscm.Dial(os.Getenv(simscm.EnvSocket)).ConnectDispatcher(context.Background()); err != nil && !errors.Is(err, simscm.ErrControllerConnect) {
		os.Stderr.WriteString("simulated test service: answering the service control manager: " + err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString("simulated test service started\n")
	<-sig
	if d, err := time.ParseDuration(os.Getenv("WINNODE_TEST_SLOW_STOP")); err == nil {
		time.Sleep(d)
	}
	return 0
}

const agentPath = `C:\k\winnode-agent.exe`

// simHost is a simulated host with the agent installed and an SSH client
// logged in as its administrator.
type simHost struct {
	t    *testing.T
	host *winsim.Host
	ssh  *ssh.Client
	scm  *simscm.Client
	// predicted is what plan.ChangedServices said of the last apply.
	predicted []string
}

func newSimHost(t *testing.T) *simHost {
	t.Helper()
	if testing.Short() {
		t.Skip("simulated-host tests build the agent and the stand-ins; skipped with -short")
	}
	h, key := fixture.SimHost(t, winsim.Options{
		// The plans here rely on the host's containerd (hostServices).
		StandinBinary: testenv.Binary(t, "cmd/winsim-standin"), ForeignContainerd: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	client := fixture.Dial(t, h, key)
	s := &simHost{t: t, host: h, ssh: client, scm: h.SCM()}
	s.put(agentPath, readFile(t, s.agentBinary()))
	return s
}

// agentBinary is the agent built for the simulator (Linux).
func (s *simHost) agentBinary() string { return testenv.Binary(s.t, "cmd/winnode-agent") }

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// put writes a file on the host (as the operator's SFTP upload would).
func (s *simHost) put(winPath string, data []byte) {
	s.t.Helper()
	local, err := s.host.Path(winPath)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(local, data, 0o755); err != nil {
		s.t.Fatal(err)
	}
}

func (s *simHost) exists(winPath string) bool {
	local, err := s.host.Path(winPath)
	if err != nil {
		s.t.Fatal(err)
	}
	_, err = os.Stat(local)
	return err == nil
}

// stage uploads a blob for each file of the plan into the staging folder.
func (s *simHost) stage(contents map[string][]byte) {
	for _, data := range contents {
		sum := sha256.Sum256(data)
		s.put(plan.DefaultStagingDir+`\`+hex.EncodeToString(sum[:]), data)
	}
}

// agent runs winnode-agent.exe with args over SSH; it returns stdout and
// the exit status.
func (s *simHost) agent(args ...string) ([]byte, int) {
	s.t.Helper()
	return s.run(agentPath, args...)
}

// run runs program with args over SSH; it returns stdout and the exit
// status.
func (s *simHost) run(program string, args ...string) ([]byte, int) {
	s.t.Helper()
	sess, err := s.ssh.NewSession()
	if err != nil {
		s.t.Fatal(err)
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, &stderr
	cmdline := wincmd.Join(append([]string{program}, args...)...)
	err = sess.Run(cmdline)
	code := 0
	var exit *ssh.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitStatus()
	case err != nil:
		s.t.Fatalf("running %s: %v\nstderr:\n%s", cmdline, err, stderr.String())
	}
	s.t.Logf("%s -> exit %d\nstderr:\n%s", cmdline, code, stderr.String())
	return stdout.Bytes(), code
}

// apply uploads the plan and runs apply, which must succeed.
func (s *simHost) apply(p *plan.Plan) plan.Result {
	s.t.Helper()
	predicted := plan.ChangedServices(s.info().InstalledPlan, p)
	res := s.applyOnly(p)
	// The operator's prediction from info never misses a service the agent
	// touches (it may name more, when the installed plan is unknown).
	for _, name := range touched(res) {
		if !slices.Contains(predicted, name) {
			s.t.Errorf("apply touched service %s, which plan.ChangedServices did not predict (it predicted %v)", name, predicted)
		}
	}
	s.predicted = predicted
	return res
}

// touched names the services an apply created, reconfigured, restarted or
// removed, sorted.
func touched(res plan.Result) []string {
	var names []string
	for _, sr := range res.Services {
		if sr.Action != plan.ServiceUnchanged || sr.Restarted {
			names = append(names, sr.Name)
		}
	}
	slices.Sort(names)
	return names
}

func (s *simHost) info() plan.Info {
	s.t.Helper()
	out, code := s.agent("info")
	var info plan.Info
	if code != 0 || json.Unmarshal(out, &info) != nil {
		s.t.Fatalf("info: exit %d, %s", code, out)
	}
	return info
}

// applyOnly runs apply and returns its result.
func (s *simHost) applyOnly(p *plan.Plan) plan.Result {
	s.t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		s.t.Fatal(err)
	}
	s.put(`C:\k\plan.json`, data)
	out, code := s.agent("apply", "--plan", `C:\k\plan.json`)
	if code != 0 {
		s.t.Fatalf("apply exited %d:\n%s", code, out)
	}
	var res plan.Result
	if err := json.Unmarshal(out, &res); err != nil {
		s.t.Fatalf("apply printed no result: %v\n%s", err, out)
	}
	return res
}

// waitLog waits until the log the simulated SCM keeps of a service's
// output holds text.
func (s *simHost) waitLog(service, text string) {
	s.t.Helper()
	local, err := s.host.Path(winsim.ServiceLogDir + `\` + service + ".log")
	if err != nil {
		s.t.Fatal(err)
	}
	testkit.Eventually(s.t, time.Minute, fmt.Sprintf("service %s logging %q", service, text), func() (bool, string) {
		data, err := os.ReadFile(local)
		return bytes.Contains(data, []byte(text)), fmt.Sprintf("its log (%v):\n%s", err, data)
	})
}

func (s *simHost) pids() map[string]int {
	s.t.Helper()
	list, err := s.scm.List(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]int{}
	for _, st := range list {
		if st.State == simscm.Running {
			out[st.Name] = st.PID
		}
	}
	return out
}

// testPlan installs three services made of the test binary: svc-a (uses
// a.conf, depends on containerd), svc-b (depends on svc-a), svc-c
// (independent); svc-a and svc-b share one binary content.
type testPlan struct {
	plan     *plan.Plan
	contents map[string][]byte // host path -> content
}

func newTestPlan(t *testing.T, version string) *testPlan {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := readFile(t, self)
	tp := &testPlan{contents: map[string][]byte{
		`C:\k\svc-a.exe`: bin,
		`C:\k\svc-b.exe`: bin,
		`C:\k\svc-c.exe`: bin,
		`C:\k\a.conf`:    []byte("setting: 1\n"),
	}}
	tp.plan = &plan.Plan{
		SchemaVersion: plan.SchemaVersion,
		Version:       version,
		Directories:   []plan.Directory{{Path: `C:\k`}, {Path: `C:\k\logs`, Logs: true}},
		HostServices:  []string{"containerd"},
		Services: []plan.Service{
			{Name: "svc-a", Binary: `C:\k\svc-a.exe`, Args: []string{"--config", `C:\k\a.conf`}, Uses: []string{`C:\k\a.conf`},
				Dependencies: []string{"containerd"}, StartType: plan.StartAuto,
				Recovery: plan.Recovery{Actions: []plan.RecoveryAction{{Type: plan.RecoveryRestart, Delay: metav1.Duration{Duration: time.Second}}},
					ResetPeriod: metav1.Duration{Duration: time.Hour}},
				Environment: map[string]string{"WINNODE_TEST": "a"}},
			{Name: "svc-b", Binary: `C:\k\svc-b.exe`, Args: []string{"with space"}, Dependencies: []string{"svc-a"}, StartType: plan.StartAuto},
			{Name: "svc-c", Binary: `C:\k\svc-c.exe`, StartType: plan.StartAuto},
		},
		FirewallPorts: []plan.FirewallPort{{Name: "svc-a", Protocol: plan.TCP, Port: 10250}},
		Checks:        []plan.Check{{Type: plan.CheckServiceRunning, Service: "svc-b"}, {Type: plan.CheckFileExists, Path: `C:\k\a.conf`}},
	}
	tp.sync()
	return tp
}

// sync recomputes the plan's file list from contents.
func (tp *testPlan) sync() {
	tp.plan.Files = nil
	for _, path := range []string{`C:\k\a.conf`, `C:\k\svc-a.exe`, `C:\k\svc-b.exe`, `C:\k\svc-c.exe`} {
		data := tp.contents[path]
		sum := sha256.Sum256(data)
		tp.plan.Files = append(tp.plan.Files, plan.File{Path: path, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))})
	}
}

func byName(res plan.Result) map[string]plan.ServiceResult {
	out := map[string]plan.ServiceResult{}
	for _, s := range res.Services {
		out[s.Name] = s
	}
	return out
}

func TestApplyOnSimulatedHost(t *testing.T) {
	h := newSimHost(t)
	tp := newTestPlan(t, "v1")

	// Nothing staged: apply refuses, naming a file, and starts nothing.
	data, _ := json.Marshal(tp.plan)
	h.put(`C:\k\plan.json`, data)
	out, code := h.agent("apply", "--plan", `C:\k\plan.json`)
	var fail plan.ErrorDocument
	if code != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrFileMissing || fail.Error.File == "" {
		t.Fatalf("apply without staged files: exit %d, %s", code, out)
	}
	if _, err := h.scm.Get(context.Background(), "svc-a"); !errors.Is(err, simscm.ErrNotFound) {
		t.Fatalf("a service was created although its binary is missing: %v", err)
	}

	// Staged, the plan too (as the operator does): apply creates and starts
	// everything, and consumes every blob.
	h.stage(tp.contents)
	sum := sha256.Sum256(data)
	stagedPlan := plan.DefaultStagingDir + `\` + hex.EncodeToString(sum[:])
	h.put(stagedPlan, data)
	out, code = h.agent("apply", "--plan", stagedPlan)
	var res plan.Result
	if code != 0 || json.Unmarshal(out, &res) != nil {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	for _, name := range []string{"svc-a", "svc-b", "svc-c"} {
		got := byName(res)[name]
		if got.Action != plan.ServiceCreated || got.State != "Running" {
			t.Errorf("%s: %+v, want created and Running", name, got)
		}
	}
	svc, err := h.scm.Get(context.Background(), "svc-b")
	if err != nil {
		t.Fatal(err)
	}
	if want := `C:\k\svc-b.exe "with space"`; svc.Config.BinaryPathName != want {
		t.Errorf("svc-b command line %q, want %q", svc.Config.BinaryPathName, want)
	}
	if svc.Config.Description != plan.ServiceDescription {
		t.Errorf("svc-b description %q", svc.Config.Description)
	}
	a, _ := h.scm.Get(context.Background(), "svc-a")
	if len(a.Config.RecoveryActions) != 1 || a.Config.RecoveryActions[0].Delay != time.Second || a.Config.ResetPeriod != time.Hour {
		t.Errorf("svc-a recovery %+v reset %s", a.Config.RecoveryActions, a.Config.ResetPeriod)
	}
	if h.exists(plan.DefaultStagingDir) {
		t.Error("the staging folder is still there after a successful apply")
	}
	if !h.exists(`C:\ProgramData\winsim\firewall-simulated.json`) {
		t.Error("the firewall port was not opened")
	}

	// info reports the installed plan's manifest.
	out, code = h.agent("info")
	var info plan.Info
	if code != 0 || json.Unmarshal(out, &info) != nil {
		t.Fatalf("info: exit %d, %s", code, out)
	}
	if info.InstalledPlan == nil || info.InstalledPlan.Version != "v1" || !info.InstalledPlan.Complete ||
		info.InstalledPlan.Files[`C:\k\a.conf`] != tp.plan.Files[0].SHA256 {
		t.Errorf("info installed plan: %+v", info.InstalledPlan)
	}
	// ... with each file's size, so that the operator needs no SFTP stat.
	if got := info.InstalledPlan.Sizes[`C:\k\a.conf`]; got != tp.plan.Files[0].Size {
		t.Errorf("info reports C:\\k\\a.conf of %d bytes, the plan put %d", got, tp.plan.Files[0].Size)
	}
	if !info.Containerd.Present || !info.Containerd.Running || info.Hostname != h.host.Hostname() || info.OS.Build != h.host.Build() {
		t.Errorf("info host facts: %+v", info)
	}

	// The same plan again: nothing restarted.
	before := h.pids()
	res = h.apply(tp.plan)
	for _, s := range res.Services {
		if s.Action != plan.ServiceUnchanged || s.Restarted {
			t.Errorf("same plan: %s %+v, want unchanged", s.Name, s)
		}
	}
	if after := h.pids(); !equalPIDs(before, after) {
		t.Errorf("same plan restarted processes: before %v after %v", before, after)
	}
	if h.predicted != nil {
		t.Errorf("same plan: predicted changes to %v", h.predicted)
	}

	// svc-c's arguments change: only svc-c restarts.
	before = h.pids()
	tp.plan.Version = "v2"
	tp.plan.Services[2].Args = []string{"--verbose"}
	res = h.apply(tp.plan)
	after := h.pids()
	if got := byName(res)["svc-c"]; got.Action != plan.ServiceUpdated || !got.Restarted || after["svc-c"] == before["svc-c"] {
		t.Errorf("svc-c: %+v, pid %d -> %d: want updated and restarted", got, before["svc-c"], after["svc-c"])
	}
	for _, name := range []string{"svc-a", "svc-b", "containerd"} {
		if after[name] != before[name] || byName(res)[name].Restarted {
			t.Errorf("%s restarted although nothing of it changed", name)
		}
	}
	if !slices.Equal(h.predicted, []string{"svc-c"}) {
		t.Errorf("svc-c's arguments: predicted changes to %v, want [svc-c]", h.predicted)
	}

	// a.conf changes: svc-a restarts, and svc-b with it (it depends on
	// svc-a, which Windows cannot stop under it); svc-c does not.
	before = h.pids()
	tp.plan.Version = "v3"
	tp.contents[`C:\k\a.conf`] = []byte("setting: 2\n")
	tp.sync()
	h.stage(map[string][]byte{"a": tp.contents[`C:\k\a.conf`]})
	res = h.apply(tp.plan)
	after = h.pids()
	if got := byName(res)["svc-a"]; got.Action != plan.ServiceUnchanged || !got.Restarted || after["svc-a"] == before["svc-a"] {
		t.Errorf("svc-a: %+v: want restarted for its changed file", got)
	}
	if got := byName(res)["svc-b"]; !got.Restarted || after["svc-b"] == before["svc-b"] {
		t.Errorf("svc-b: %+v: want restarted with svc-a", got)
	}
	if after["svc-c"] != before["svc-c"] || after["containerd"] != before["containerd"] {
		t.Errorf("svc-c or containerd restarted by a change to a.conf")
	}
	if want := []string{"svc-a", "svc-b"}; !slices.Equal(h.predicted, want) {
		t.Errorf("a.conf: predicted changes to %v, want %v", h.predicted, want)
	}

	// svc-c leaves the plan: it is stopped and deleted, its file removed.
	tp.plan.Version = "v4"
	tp.plan.Services = tp.plan.Services[:2]
	delete(tp.contents, `C:\k\svc-c.exe`)
	tp.plan.Files = tp.plan.Files[:3]
	res = h.apply(tp.plan)
	if got := byName(res)["svc-c"]; got.Action != plan.ServiceRemoved {
		t.Errorf("svc-c: %+v, want removed", got)
	}
	if !slices.Equal(h.predicted, []string{"svc-c"}) {
		t.Errorf("svc-c dropped: predicted changes to %v, want [svc-c]", h.predicted)
	}
	if _, err := h.scm.Get(context.Background(), "svc-c"); !errors.Is(err, simscm.ErrNotFound) {
		t.Errorf("svc-c still installed: %v", err)
	}
	if h.exists(`C:\k\svc-c.exe`) {
		t.Error(`C:\k\svc-c.exe still there`)
	}
}

func equalPIDs(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestRemoveOnSimulatedHost(t *testing.T) {
	h := newSimHost(t)

	// On a host never configured, remove has nothing to do.
	out, code := h.agent("remove")
	if code != 0 {
		t.Fatalf("remove on a fresh host: exit %d: %s", code, out)
	}

	tp := newTestPlan(t, "v1")
	h.stage(tp.contents)
	h.apply(tp.plan)
	h.put(`C:\k\logs\svc-a.log`, []byte("a log line\n"))
	h.put(`C:\k\kubelet-written-file`, []byte("written by a service\n"))

	out, code = h.agent("remove")
	var res plan.Result
	if code != 0 || json.Unmarshal(out, &res) != nil {
		t.Fatalf("remove: exit %d: %s", code, out)
	}
	if len(res.Services) != 3 {
		t.Errorf("remove reported %+v, want 3 services removed", res.Services)
	}
	list, err := h.scm.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "containerd" || list[0].State != simscm.Running {
		t.Errorf("services after remove: %+v, want only containerd, still running", list)
	}
	// Nothing left in C:\k but the logs and the running agent itself.
	var left []string
	root, _ := h.host.Path(`C:\k`)
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(root, p)
			left = append(left, rel)
		}
		return nil
	})
	if strings.Join(left, " ") != "logs/svc-a.log winnode-agent.exe" {
		t.Errorf(`left in C:\k after remove: %v, want the log and the agent`, left)
	}
	for _, p := range []string{`C:\ProgramData\winnode`, `C:\ProgramData\winsim\firewall-simulated.json`} {
		if h.exists(p) {
			t.Errorf("%s still there after remove", p)
		}
	}

	// Twice is fine: the state is gone, so the second remove knows of
	// nothing to delete, the log folder included, even with --purge-logs.
	if out, code := h.agent("remove", "--purge-logs"); code != 0 {
		t.Fatalf("second remove: exit %d: %s", code, out)
	}
	if !h.exists(`C:\k\logs\svc-a.log`) {
		t.Error("a remove with no state to undo deleted the log folder")
	}

	// Configured again, remove --purge-logs takes the log folder too, and
	// still keeps the running agent.
	h.stage(tp.contents)
	h.apply(tp.plan)
	if out, code := h.agent("remove", "--purge-logs"); code != 0 {
		t.Fatalf("remove --purge-logs: exit %d: %s", code, out)
	}
	if h.exists(`C:\k\logs`) {
		t.Errorf(`C:\k\logs still there after remove --purge-logs`)
	}
	if !h.exists(agentPath) {
		t.Errorf("remove --purge-logs deleted the running agent %s", agentPath)
	}
}

// TestApplyConvergesAfterKill kills the agent while it waits for a service
// to stop, then applies again.
func TestApplyConvergesAfterKill(t *testing.T) {
	h := newSimHost(t)
	tp := newTestPlan(t, "v1")
	tp.plan.Services[0].Environment["WINNODE_TEST_SLOW_STOP"] = "3s"
	h.stage(tp.contents)
	h.apply(tp.plan)
	// The simulated SCM calls a service Running once its process exists;
	// svc-a is slow to stop only once serviceMain has its SIGTERM handler
	// (before that, SIGTERM ends it at once and the agent may finish the
	// apply before the test kills it).
	h.waitLog("svc-a", "simulated test service started")

	// A change to svc-a: the agent stops svc-b, then svc-a (slow to stop).
	tp.plan.Version = "v2"
	tp.plan.Services[0].Args = []string{"--config", `C:\k\a.conf`, "--changed"}
	data, _ := json.Marshal(tp.plan)
	h.put(`C:\k\plan.json`, data)

	// Run the agent's process directly on the simulated host's filesystem
	// and SCM (what an SSH exec does), so the test can kill it.
	agentBin, _ := h.host.Path(agentPath)
	cmd := exec.Command(agentBin, "apply", "--plan", `C:\k\plan.json`)
	cmd.Env = append(os.Environ(), simscm.EnvRoot+"="+h.host.Root(), simscm.EnvSocket+"="+h.host.SCMSocket())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		buf := make([]byte, 4096)
		var seen []byte
		for {
			n, err := stderr.Read(buf)
			seen = append(seen, buf[:n]...)
			if bytes.Contains(seen, []byte(`msg="stopping service" service=svc-a`)) {
				cmd.Process.Kill()
				return
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the agent never started stopping svc-a within 60s")
	}
	cmd.Wait()

	out, code := h.agent("info")
	var info plan.Info
	if code != 0 || json.Unmarshal(out, &info) != nil || info.InstalledPlan == nil || info.InstalledPlan.Complete {
		t.Fatalf("after the kill, info should report an incomplete plan: exit %d %s", code, out)
	}

	res := h.apply(tp.plan)
	for _, s := range res.Services {
		if s.State != "Running" {
			t.Errorf("after the second apply %s is %s", s.Name, s.State)
		}
	}
	svc, err := h.scm.Get(context.Background(), "svc-a")
	if err != nil || !strings.HasSuffix(svc.Config.BinaryPathName, "--changed") {
		t.Errorf("svc-a not reconfigured: %+v %v", svc.Config, err)
	}
	// And once more: converged, nothing changes.
	for _, s := range h.apply(tp.plan).Services {
		if s.Action != plan.ServiceUnchanged || s.Restarted {
			t.Errorf("third apply: %+v", s)
		}
	}
}

func TestBootstrapOnSimulatedHost(t *testing.T) {
	h := newSimHost(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet here is this test binary acting as a service (svc-*);
	// the payload puts winnode-service.exe beside the agent.
	h.put(`C:\k\svc-kubelet.exe`, readFile(t, self))
	h.put(`C:\k\winnode-service.exe`, readFile(t, testenv.Binary(t, "cmd/winnode-service")))
	h.put(`C:\k\worker.ign`, readFile(t, filepath.Join("..", "ignition", "testdata", "worker-3.4.0.ign")))
	args := []string{"bootstrap", "--ignition-file", `C:\k\worker.ign`, "--kubelet-path", `C:\k\svc-kubelet.exe`,
		"--node-ip", "10.0.0.5", "--cluster-dns", "172.30.0.10"}

	out, code := h.agent(append(args, "--dry-run")...)
	var doc struct {
		DryRun bool         `json:"dryRun"`
		Plan   plan.Plan    `json:"plan"`
		Files  []plan.File  `json:"files"`
		Result *plan.Result `json:"result"`
	}
	if code != 0 || json.Unmarshal(out, &doc) != nil {
		t.Fatalf("bootstrap --dry-run: exit %d\n%s", code, out)
	}
	if bytes.Contains(out, []byte("0123456789abcdef")) {
		t.Error("the dry run printed the bootstrap token")
	}
	// The bootstrap kubeconfig, kubelet CA, kubelet configuration and
	// winnode-service.exe (the kubelet service's program).
	if !doc.DryRun || doc.Result != nil || len(doc.Files) != 4 || len(doc.Plan.Services) != 1 {
		t.Errorf("dry run document: %+v", doc)
	}
	kubelet := doc.Plan.Services[0]
	cmdline := strings.Join(kubelet.Args, " ")
	wantPrefix := `--name kubelet --log-file C:\k\log\kubelet.log --log-file-size 100M --log-file-age 168h0m0s -- C:\k\svc-kubelet.exe `
	if kubelet.Binary != `C:\k\winnode-service.exe` || !strings.HasPrefix(cmdline, wantPrefix) {
		t.Errorf("kubelet service %s %q; want winnode-service.exe with %q...", kubelet.Binary, cmdline, wantPrefix)
	}
	for _, want := range []string{`--bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig`, "--cloud-provider=aws", "--v=4", "--node-ip=10.0.0.5"} {
		if !strings.Contains(cmdline, want) {
			t.Errorf("kubelet arguments %q lack %q", cmdline, want)
		}
	}
	for _, gone := range []string{"--cloud-config", "--logtostderr", "--windows-service", "--log-file=", `C:\k\log\kubelet.log -- C:\k\svc-kubelet.exe --log-file`} {
		if strings.Contains(cmdline, gone) {
			t.Errorf("kubelet arguments %q have %q, which the kubelet of Kubernetes v1.37 refuses or which its wrapper must not get", cmdline, gone)
		}
	}
	if _, err := h.scm.Get(context.Background(), "kubelet"); !errors.Is(err, simscm.ErrNotFound) || h.exists(`C:\k\kubelet.yaml`) || h.exists(plan.DefaultStagingDir) {
		t.Errorf("the dry run changed the host (service: %v)", err)
	}

	out, code = h.agent(args...)
	if code != 0 {
		t.Fatalf("bootstrap: exit %d\n%s", code, out)
	}
	svc, err := h.scm.Get(context.Background(), "kubelet")
	if err != nil || svc.Status.State != simscm.Running {
		logs, _ := h.host.ServiceLog("kubelet")
		local, _ := h.host.Path(`C:\k\log\kubelet.log`)
		wrapped, _ := os.ReadFile(local)
		t.Fatalf("kubelet service: %+v, %v; want Running\nservice log:\n%s\nkubelet.log:\n%s", svc.Status, err, logs, wrapped)
	}
	local, _ := h.host.Path(`C:\k\bootstrap-kubeconfig`)
	if kc, err := os.ReadFile(local); err != nil || !bytes.Contains(kc, []byte("server: https://api-int.example.test:6443")) {
		t.Errorf("bootstrap kubeconfig not written: %v", err)
	}
	local, _ = h.host.Path(`C:\k\kubelet.yaml`)
	cfg, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`clientCAFile: C:\k\kubelet-ca.crt`, "- 172.30.0.10", "verbosity: 4", "npipe://./pipe/containerd-containerd"} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("kubelet.yaml lacks %q:\n%s", want, cfg)
		}
	}

	// Bootstrapping again changes nothing.
	out, code = h.agent(args...)
	var again struct {
		Result plan.Result `json:"result"`
	}
	if code != 0 || json.Unmarshal(out, &again) != nil || len(again.Result.Services) != 1 ||
		again.Result.Services[0].Action != plan.ServiceUnchanged || again.Result.Services[0].Restarted {
		t.Errorf("second bootstrap: exit %d\n%s", code, out)
	}

	// An unsupported Ignition version is an error naming it.
	h.put(`C:\k\bad.ign`, []byte(`{"ignition":{"version":"3.9.0"}}`))
	out, code = h.agent("bootstrap", "--ignition-file", `C:\k\bad.ign`, "--kubelet-path", `C:\k\svc-kubelet.exe`)
	var fail plan.ErrorDocument
	if code != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrIgnition || !strings.Contains(fail.Error.Message, "3.9.0") {
		t.Errorf("bad Ignition: exit %d\n%s", code, out)
	}
}

// TestApplyRefusesTamperedBinary: a service binary changed on the host and
// not staged again is an error naming it, and the service is not started. A
// staged blob with the wrong content is deleted, so that the operator's
// next sync uploads it again and the apply after it succeeds.
func TestApplyRefusesTamperedBinary(t *testing.T) {
	h := newSimHost(t)
	tp := newTestPlan(t, "v1")
	h.stage(tp.contents)
	h.apply(tp.plan)
	if err := h.scm.Stop(context.Background(), "svc-c"); err != nil {
		t.Fatal(err)
	}
	h.put(`C:\k\svc-c.exe`, []byte("#!/bin/sh\necho tampered\n"))
	// A staged blob under the right name but with other content does not
	// count, and is deleted.
	badBlob := plan.DefaultStagingDir + `\` + tp.plan.Files[3].SHA256
	h.put(badBlob, []byte("not the binary"))

	data, _ := json.Marshal(tp.plan)
	h.put(`C:\k\plan.json`, data)
	out, code := h.agent("apply", "--plan", `C:\k\plan.json`)
	var fail plan.ErrorDocument
	if code != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrFileMissing || fail.Error.File != `C:\k\svc-c.exe` ||
		!strings.Contains(fail.Error.Message, "staged blob has sha256") || !strings.Contains(fail.Error.Message, "deleted; upload it again") {
		t.Fatalf("apply with a tampered binary: exit %d\n%s", code, out)
	}
	if h.exists(badBlob) {
		t.Errorf("the staged blob with the wrong content is still there: the next sync would skip it")
	}
	svc, err := h.scm.Get(context.Background(), "svc-c")
	if err != nil || svc.Status.State != simscm.Stopped {
		t.Errorf("svc-c: %+v %v, want still Stopped", svc.Status, err)
	}
	// info no longer lists the tampered file, so the operator uploads it.
	out, _ = h.agent("info")
	var info plan.Info
	if json.Unmarshal(out, &info) != nil || info.InstalledPlan == nil {
		t.Fatalf("info: %s", out)
	}
	if _, listed := info.InstalledPlan.Files[`C:\k\svc-c.exe`]; listed || info.InstalledPlan.Files[`C:\k\a.conf`] == "" {
		t.Errorf("manifest after a failed apply: %v, want svc-c.exe dropped and a.conf kept", info.InstalledPlan.Files)
	}

	// The operator's retry stages the binary again: the apply converges.
	h.put(badBlob, tp.contents[`C:\k\svc-c.exe`])
	res := h.applyOnly(tp.plan)
	if got := byName(res)["svc-c"]; got.State != "Running" {
		t.Errorf("svc-c after the retry: %+v, want Running", got)
	}
	local, _ := h.host.Path(`C:\k\svc-c.exe`)
	if data, err := os.ReadFile(local); err != nil || !bytes.Equal(data, tp.contents[`C:\k\svc-c.exe`]) {
		t.Errorf("svc-c.exe after the retry is not the plan's binary (%v)", err)
	}
}

// A host listed in another cluster drops what its services wrote for the
// old one (the kubelet's kubeconfig and certificates) and restarts them; the
// same cluster again keeps them and restarts nothing.
func TestApplyDropsCredentialsOfAnotherCluster(t *testing.T) {
	h := newSimHost(t)
	tp := newTestPlan(t, "v1")
	tp.plan.Cluster = "cluster-one"
	tp.plan.ClusterCredentials = []string{`C:\k\kubeconfig`, `C:\var\lib\kubelet\pki`}
	h.stage(tp.contents)
	h.apply(tp.plan)
	// What a kubelet writes once joined.
	h.put(`C:\k\kubeconfig`, []byte("cluster one's node credentials"))
	h.put(`C:\var\lib\kubelet\pki\kubelet-client-current.pem`, []byte("cert"))

	before := h.pids()
	res := h.apply(tp.plan)
	if !h.exists(`C:\k\kubeconfig`) || !h.exists(`C:\var\lib\kubelet\pki\kubelet-client-current.pem`) {
		t.Fatal("the same cluster again: credentials deleted")
	}
	if after := h.pids(); !equalPIDs(before, after) {
		t.Fatalf("the same cluster again restarted services: %v -> %v (%+v)", before, after, res.Services)
	}

	tp.plan.Cluster = "cluster-two"
	tp.plan.Version = "v2"
	res = h.apply(tp.plan)
	if h.exists(`C:\k\kubeconfig`) || h.exists(`C:\var\lib\kubelet\pki`) {
		t.Error("another cluster: the old cluster's credentials are still there")
	}
	after := h.pids()
	for name, s := range byName(res) {
		if !s.Restarted || s.State != "Running" || after[name] == before[name] {
			t.Errorf("%s after the cluster changed: %+v (pid %d -> %d), want restarted and Running", name, s, before[name], after[name])
		}
	}
	if !h.exists(`C:\k\a.conf`) || !h.exists(`C:\k\svc-a.exe`) {
		t.Error("plan files were deleted with the credentials")
	}
}
