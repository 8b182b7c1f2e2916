package winsim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/wincmd"
)

func waitLog(t *testing.T, h *Host, service, text string) {
	t.Helper()
	file, _ := h.Path(`C:\ProgramData\winsim\logs\` + service + ".log")
	testkit.Eventually(t, 20*time.Second, fmt.Sprintf("%q in %s's log", text, service), func() (bool, string) {
		data, err := os.ReadFile(file)
		return strings.Contains(string(data), text), fmt.Sprintf("%q %v", data, err)
	})
}

func serviceState(t *testing.T, c *simscm.Client, name string) simscm.Status {
	t.Helper()
	s, err := c.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get %s: %v", name, err)
	}
	return s.Status
}

func helperService(name string, start plan.StartType, deps ...string) simscm.Config {
	return simscm.Config{
		Name:           name,
		BinaryPathName: wincmd.Join(`C:\k\helper.exe`, "serve", name),
		StartType:      start,
		Dependencies:   deps,
		Environment:    []string{"CUSTOM=1"},
	}
}

func TestSCMDependencies(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.SCM()
	ctx := context.Background()

	for _, cfg := range []simscm.Config{
		helperService("base", plan.StartManual),
		helperService("middle", plan.StartManual, "base"),
		helperService("top", plan.StartManual, "middle"),
		helperService("off", plan.StartDisabled),
		helperService("needsoff", plan.StartManual, "off"),
	} {
		if err := c.Create(ctx, cfg); err != nil {
			t.Fatalf("Create %s: %v", cfg.Name, err)
		}
	}
	if err := c.Create(ctx, helperService("BASE", plan.StartManual)); !errors.Is(err, simscm.ErrExists) {
		t.Errorf("creating BASE again (names are case-insensitive): %v, want ErrExists", err)
	}

	// Starting the top starts its dependencies first.
	if err := c.Start(ctx, "top"); err != nil {
		t.Fatalf("Start top: %v", err)
	}
	for _, n := range []string{"base", "middle", "top"} {
		if st := serviceState(t, c, n); st.State != simscm.Running || st.PID == 0 {
			t.Errorf("%s after starting top: %+v, want Running", n, st)
		}
	}
	if base, top := serviceState(t, c, "base").PID, serviceState(t, c, "top").PID; base > top {
		t.Errorf("base (pid %d) started after top (pid %d)", base, top)
	}
	// A Linux process cannot say when it is ready; wait for the output.
	for _, n := range []string{"base", "middle", "top"} {
		waitLog(t, th.Host, n, n+" started")
	}
	if err := c.Start(ctx, "top"); !errors.Is(err, simscm.ErrAlreadyRunning) {
		t.Errorf("Start of a running service: %v, want ErrAlreadyRunning", err)
	}

	// A depended-on service refuses to stop while its dependents run.
	err := c.Stop(ctx, "base")
	if !errors.Is(err, simscm.ErrDependentRunning) || !strings.Contains(err.Error(), "middle") {
		t.Errorf("Stop base: %v, want ErrDependentRunning naming middle", err)
	}
	for _, n := range []string{"top", "middle", "base"} {
		if err := c.Stop(ctx, n); err != nil {
			t.Fatalf("Stop %s: %v", n, err)
		}
		if st := serviceState(t, c, n); st.State != simscm.Stopped {
			t.Errorf("%s after Stop: %s", n, st.State)
		}
	}
	if err := c.Stop(ctx, "base"); !errors.Is(err, simscm.ErrNotActive) {
		t.Errorf("Stop of a stopped service: %v, want ErrNotActive", err)
	}

	// Disabled services and their dependents do not start.
	if err := c.Start(ctx, "off"); !errors.Is(err, simscm.ErrDisabled) {
		t.Errorf("Start off: %v, want ErrDisabled", err)
	}
	if err := c.Start(ctx, "needsoff"); !errors.Is(err, simscm.ErrDependencyFailed) {
		t.Errorf("Start needsoff: %v, want ErrDependencyFailed", err)
	}
	if err := c.Start(ctx, "nosuch"); !errors.Is(err, simscm.ErrNotFound) {
		t.Errorf("Start nosuch: %v, want ErrNotFound", err)
	}
	bad := helperService("badprog", plan.StartManual)
	bad.BinaryPathName = `C:\k\missing.exe --x`
	if err := c.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "badprog"); !errors.Is(err, simscm.ErrFileNotFound) {
		t.Errorf("Start of a service whose program is missing: %v, want ErrFileNotFound", err)
	}

	// Each service's output lands in its log file on the host.
	data, err := th.ServiceLog("base")
	if err != nil || !strings.Contains(string(data), "base started") || !strings.Contains(string(data), "base stopping") {
		t.Errorf("base.log = %q, %v; want the service's output", data, err)
	}

	// Change configuration, then delete.
	upd := helperService("top", plan.StartAuto, "middle")
	upd.DisplayName = "Top service"
	if err := c.Update(ctx, upd); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if s, _ := c.Get(ctx, "top"); s.Config.StartType != plan.StartAuto || s.Config.DisplayName != "Top service" {
		t.Errorf("after Update: %+v", s.Config)
	}
	if err := c.Delete(ctx, "top"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.Get(ctx, "top"); !errors.Is(err, simscm.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	list, err := c.List(ctx)
	if err != nil || len(list) != 5 {
		t.Errorf("List = %v, %v; want 5 services", list, err)
	}
	info, err := c.Host(ctx)
	if err != nil || info.Hostname != th.Hostname() || info.DefaultIPv4 != th.IP() || info.Build != "10.0.17763" || info.ProductName != "Windows Server 2019 Datacenter" {
		t.Errorf("Host = %+v, %v", info, err)
	}
}

func TestSCMRecoveryAfterCrash(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.SCM()
	ctx := context.Background()

	cfg := helperService("kubelet", plan.StartManual)
	cfg.RecoveryActions = []simscm.Action{{Type: "restart", Delay: 100 * time.Millisecond}}
	cfg.ResetPeriod = time.Hour
	noRecovery := helperService("oneshot", plan.StartManual)
	for _, c2 := range []simscm.Config{cfg, noRecovery} {
		if err := c.Create(ctx, c2); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, c2.Name); err != nil {
			t.Fatal(err)
		}
	}
	first := serviceState(t, c, "kubelet").PID
	for i := 1; i <= 2; i++ {
		if err := th.CrashService("kubelet"); err != nil {
			t.Fatalf("CrashService: %v", err)
		}
		testkit.Eventually(t, 20*time.Second, "kubelet restarted by its recovery action", func() (bool, string) {
			st := serviceState(t, c, "kubelet")
			return st.State == simscm.Running && st.PID != first && st.Failures == i, fmt.Sprintf("%+v", st)
		})
		first = serviceState(t, c, "kubelet").PID
	}
	if err := th.CrashService("oneshot"); err != nil {
		t.Fatal(err)
	}
	if st := serviceState(t, c, "oneshot"); st.State != simscm.Stopped || st.Failures != 1 || st.ExitCode == 0 {
		t.Errorf("oneshot after a crash without recovery actions: %+v, want Stopped with a failure", st)
	}
}

func TestReboot(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.SCM()
	ctx := context.Background()
	if err := c.Create(ctx, helperService("auto1", plan.StartAuto)); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, helperService("manual1", plan.StartManual)); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"auto1", "manual1"} {
		if err := c.Start(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	before := serviceState(t, c, "auto1").PID
	client := th.dial(t)
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start(`C:\k\helper.exe cat`); err != nil {
		t.Fatal(err)
	}
	info, _ := c.Host(ctx)

	if err := th.Reboot(); err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	// The SSH session dropped with the host.
	waitErr := make(chan error, 1)
	go func() { waitErr <- sess.Wait() }()
	select {
	case err := <-waitErr:
		if err == nil {
			t.Errorf("the session survived a reboot")
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the SSH session was still open 20s after the reboot")
	}
	// Auto-start services are back with new processes, manual ones are not.
	if st := serviceState(t, c, "auto1"); st.State != simscm.Running || st.PID == before {
		t.Errorf("auto1 after reboot: %+v, want Running in a new process", st)
	}
	if st := serviceState(t, c, "manual1"); st.State != simscm.Stopped {
		t.Errorf("manual1 after reboot: %+v, want Stopped", st)
	}
	after, err := c.Host(ctx)
	if err != nil || !after.BootTime.After(info.BootTime) {
		t.Errorf("boot time %v then %v (%v): want it to move", info.BootTime, after.BootTime, err)
	}
	// And it takes new SSH connections.
	if out, _, code := run(t, th.dial(t), `C:\k\helper.exe json`, ""); code != 0 || out == "" {
		t.Errorf("exec after reboot: exit %d", code)
	}
}

// A running program's file cannot be deleted or replaced, as on Windows; it
// can be renamed, and once the program stops it can be deleted.
func TestRunningProgramFileInUse(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.SCM()
	ctx := context.Background()
	if err := c.Create(ctx, helperService("svc", plan.StartManual)); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	sc, err := sftp.NewClient(th.dial(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	const inUse = "being used by another process"
	if err := sc.Remove("/C:/k/helper.exe"); err == nil || !strings.Contains(err.Error(), inUse) {
		t.Errorf("removing a running program: %v, want %q", err, inUse)
	}
	if _, err := sc.Create("/C:/k/HELPER.EXE"); err == nil || !strings.Contains(err.Error(), inUse) {
		t.Errorf("overwriting a running program: %v, want %q", err, inUse)
	}
	f, err := sc.Create("/C:/k/new.exe")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := sc.PosixRename("/C:/k/new.exe", "/C:/k/helper.exe"); err == nil || !strings.Contains(err.Error(), inUse) {
		t.Errorf("renaming over a running program: %v, want %q", err, inUse)
	}
	if err := sc.Rename("/C:/k/helper.exe", "/C:/k/helper.old.exe"); err != nil {
		t.Errorf("renaming a running program (allowed on Windows): %v", err)
	}
	// The upgrade path: the new file takes the old name while the old
	// program still runs from the renamed file.
	if err := sc.PosixRename("/C:/k/new.exe", "/C:/k/helper.exe"); err != nil {
		t.Errorf("moving a new file to the running program's old name: %v", err)
	}
	if err := sc.Remove("/C:/k/helper.old.exe"); err == nil || !strings.Contains(err.Error(), inUse) {
		t.Errorf("removing the renamed running program: %v, want %q", err, inUse)
	}
	if err := c.Stop(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if err := sc.Remove("/C:/k/helper.old.exe"); err != nil {
		t.Errorf("removing the program once stopped: %v", err)
	}
}

// TestSCMStartWaitsForTheServiceToAnswer: as on Windows, Start returns once
// the service's process has answered the service control manager; a
// process that never answers is killed after the start timeout (1053), one
// that ends first fails the start (1067), and only the process the SCM
// started may answer (a console run or a child gets 1063).
func TestSCMStartWaitsForTheServiceToAnswer(t *testing.T) {
	th := newTestHost(t, Options{ServiceStartTimeout: time.Second})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.SCM()
	ctx := context.Background()
	create := func(name string, args ...string) {
		t.Helper()
		cfg := helperService(name, plan.StartManual)
		cfg.BinaryPathName = wincmd.Join(append([]string{`C:\k\helper.exe`}, args...)...)
		if err := c.Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	create("answers", "serve", "answers")
	create("silent", "silent")
	create("exits", "fail", "3", "bad flag")
	create("child", "child-dispatch")

	if err := c.Start(ctx, "answers"); err != nil {
		t.Fatalf("Start of a service that answers: %v", err)
	}
	if st := serviceState(t, c, "answers"); st.State != simscm.Running {
		t.Errorf("answers after Start: %+v, want Running", st)
	}

	err := c.Start(ctx, "silent")
	if !errors.Is(err, simscm.ErrRequestTimeout) || !strings.Contains(err.Error(), "did not respond to the start or control request in a timely fashion") {
		t.Errorf("Start of a service that never answers: %v, want ErrRequestTimeout with Windows' words", err)
	}
	if st := serviceState(t, c, "silent"); st.State != simscm.Stopped || st.PID != 0 || st.Failures != 0 {
		t.Errorf("silent after its start timed out: %+v, want Stopped, its process killed, no failure counted", st)
	}

	err = c.Start(ctx, "exits")
	if !errors.Is(err, simscm.ErrProcessAborted) || !strings.Contains(err.Error(), "code 3") {
		t.Errorf("Start of a service whose process exits at once: %v, want ErrProcessAborted naming exit code 3", err)
	}

	// The child of a service's process cannot answer for it: the service
	// times out although a process of its tree asked.
	if err := c.Start(ctx, "child"); !errors.Is(err, simscm.ErrRequestTimeout) {
		t.Errorf("Start of a service whose child answers: %v, want ErrRequestTimeout", err)
	}
	if data, _ := th.ServiceLog("child"); !strings.Contains(string(data), "could not connect to the service controller") {
		t.Errorf("child.log = %q; want the child refused with ERROR_FAILED_SERVICE_CONTROLLER_CONNECT's words", data)
	}

	// A program run over SSH is no service either.
	out, _, code := run(t, th.dial(t), `C:\k\helper.exe dispatch`, "")
	if code != 0 || !strings.Contains(out, "could not connect to the service controller") {
		t.Errorf("dispatch from SSH: exit %d, %q; want refused", code, out)
	}
}
