package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/simscm"
)

// build compiles winsim and winsim-standin side by side, as a release puts
// them.
func build(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, pkg := range []string{"./cmd/winsim", "./cmd/winsim-standin"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(pkg)), pkg)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return filepath.Join(dir, "winsim")
}

var hostLine = regexp.MustCompile(`^(WIN-[A-Z0-9]{11}) (127\.0\.\d+\.\d+:\d+) (SHA256:[A-Za-z0-9+/]{43})$`)

type runningWinsim struct {
	cmd   *exec.Cmd
	lines [][]string
}

// start runs winsim and reads its host lines.
func start(t *testing.T, bin string, args ...string) *runningWinsim {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	r := &runningWinsim{cmd: cmd}
	got := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			m := hostLine.FindStringSubmatch(sc.Text())
			if m == nil {
				got <- fmt.Errorf("line %q is not `<hostname> <ip>:<port> <SHA256:fingerprint>`", sc.Text())
				return
			}
			r.lines = append(r.lines, m[1:])
			if len(r.lines) == 2 {
				got <- nil
				return
			}
		}
		got <- errors.New("winsim ended its output early")
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no host lines after 60s\nstderr:\n%s", stderr.String())
	}
	return r
}

func (r *runningWinsim) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("winsim after SIGINT: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("winsim still running 60s after SIGINT")
	}
}

func TestWinsimStandalone(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	key := fixture.NewKey(t)
	keyFile := filepath.Join(dir, "id.pub")
	if err := os.WriteFile(keyFile, key.AuthorizedKey(), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	// --foreign-containerd: hosts with a containerd of their own (a stock
	// host has none), whose process shows the hosts run and stop.
	// --defender: what the defender pre-flight check reports of new hosts
	// (issue 28). (--containers-feature=false would stop their containerd,
	// as Windows does without the feature: TestPreflightOnBrokenHost in
	// internal/agent covers the option.)
	w := start(t, bin, "--hosts", "2", "--authorized-key", keyFile, "--state", state, "--windows-build", "2022", "--foreign-containerd", "--defender")

	// Log in to the first host with the key, pinned to the printed fingerprint.
	signer := key.Signer
	name, addr, fp := w.lines[0][0], w.lines[0][1], w.lines[0][2]
	c, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, Timeout: 10 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if got := ssh.FingerprintSHA256(key); got != fp {
				return fmt.Errorf("host key %s, printed %s", got, fp)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatalf("ssh %s: %v", addr, err)
	}
	s, _ := c.NewSession()
	out, err := s.Output(`"C:\Program Files\containerd\containerd.exe" --version`)
	c.Close()
	if err != nil || !strings.Contains(string(out), "simulated") {
		t.Errorf("containerd.exe --version on %s: %q, %v", name, out, err)
	}

	// containerd runs from boot on every host; remember its process.
	var pids []int
	for i := range w.lines {
		sock := filepath.Join(state, fmt.Sprintf("host-%d", i+1), "scm.sock")
		svc, err := simscm.Dial(sock).Get(context.Background(), "containerd")
		if err != nil || svc.Status.State != simscm.Running {
			t.Fatalf("host %d containerd: %+v, %v", i+1, svc.Status, err)
		}
		info, _ := simscm.Dial(sock).Host(context.Background())
		if info.Build != "10.0.20348" {
			t.Errorf("host %d build %s, want 10.0.20348 (2022)", i+1, info.Build)
		}
		if d, err := simscm.Dial(sock).Defender(context.Background()); err != nil || !d.Running {
			t.Errorf("host %d with --defender: Defender %+v, %v; want running", i+1, d, err)
		}
		pids = append(pids, svc.Status.PID)
	}
	w.stop(t)
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("containerd (pid %d) still runs after winsim stopped", pid)
		}
	}

	// The state folder keeps the hosts; the pre-flight checks' conditions
	// (issue 28) given on the command line apply to saved hosts too.
	again := start(t, bin, "--hosts", "2", "--authorized-key", keyFile, "--state", state,
		"--windows-build", "2022.643", "--free-disk-gib", "12", "--clock-offset", "-10m", "--pending-reboot", "--no-api-route", "--dhcp")
	for i := range w.lines {
		if strings.Join(again.lines[i], " ") != strings.Join(w.lines[i], " ") {
			t.Errorf("host %d after a restart: %v, before %v", i+1, again.lines[i], w.lines[i])
		}
		sock := filepath.Join(state, fmt.Sprintf("host-%d", i+1), "scm.sock")
		info, err := simscm.Dial(sock).Host(context.Background())
		if err != nil {
			t.Fatalf("host %d: %v", i+1, err)
		}
		if info.UBR != 643 || info.FreeDiskBytes != 12<<30 || info.ClockOffset != -10*time.Minute || !info.UpdateRebootPending || !info.NoAPIRoute || len(info.DHCPv4) == 0 {
			t.Errorf("host %d with the pre-flight flags reports %+v, want UBR 643, 12 GiB free, clock -10m, a restart pending, no API route, a DHCP address", i+1, info)
		}
	}
	again.stop(t)
}

func TestParseBuild(t *testing.T) {
	for _, tc := range []struct {
		in    string
		build string
		ubr   int
		ok    bool
	}{
		{"", "", 0, true}, {"2019", "2019", 0, true}, {"2022.643", "2022", 643, true},
		{"2016", "", 0, false}, {"2022.", "", 0, false}, {"2022.x", "", 0, false}, {"2022.-1", "", 0, false},
	} {
		build, ubr, err := parseBuild(tc.in)
		if (err == nil) != tc.ok || build != tc.build || ubr != tc.ubr {
			t.Errorf("parseBuild(%q) = %q %d %v", tc.in, build, ubr, err)
		}
	}
}
