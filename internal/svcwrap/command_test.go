//go:build !windows

package svcwrap

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/winnode/winnode/internal/logrotate"
)

// shell is a Command whose program, C:\bin\sh.exe, is this machine's
// /bin/sh, logging to C:\var\log\t\t.log under dir.
func shell(t *testing.T, dir, script string) (Command, func(string) (string, error)) {
	t.Helper()
	c, _, err := Parse([]string{"--name", "t", "--log-file", `C:\var\log\t\t.log`, "--log-file-size", "1Mi", "--", `C:\bin\sh.exe`, "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(p string) (string, error) {
		if p == `C:\bin\sh.exe` {
			return "/bin/sh", nil
		}
		local := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(p, `C:\`), `\`, "/"))
		return local, os.MkdirAll(filepath.Dir(local), 0o755)
	}
	return c, resolve
}

func readLog(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "var/log/t/t.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The program's output (standard output and error) goes to the log, and
// its exit code is the wrapper's: the SCM's recovery actions see it.
func TestTheProgramsOutputAndCodeAreKept(t *testing.T) {
	dir := t.TempDir()
	c, resolve := shell(t, dir, "echo to-stdout; echo to-stderr >&2; exit 3")
	if c.Limits().Size != 1<<20 || c.Limits().Age != logrotate.Defaults.Age {
		t.Errorf("limits %+v, want 1Mi and the default age", c.Limits())
	}
	cmd, log, err := c.command(resolve)
	if err != nil {
		t.Fatal(err)
	}
	code, err := supervise(context.Background(), cmd, log)
	log.Close()
	if code != 3 || err == nil {
		t.Errorf("exit %d (%v), want 3 and an error", code, err)
	}
	text := readLog(t, dir)
	for _, want := range []string{"winnode-service: started C:\\bin\\sh.exe", "to-stdout", "to-stderr", "exited with code 3"} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q:\n%s", want, text)
		}
	}
}

// A service's program that ends with 0 without being stopped has still
// failed: the wrapper exits 1 so that Windows restarts it.
func TestExitZeroOnItsOwnIsAFailure(t *testing.T) {
	dir := t.TempDir()
	c, resolve := shell(t, dir, "exit 0")
	cmd, log, err := c.command(resolve)
	if err != nil {
		t.Fatal(err)
	}
	code, err := supervise(context.Background(), cmd, log)
	log.Close()
	if code != 1 || err == nil || !strings.Contains(readLog(t, dir), "counts it as a failure") {
		t.Errorf("exit %d (%v), want 1 and a note in the log:\n%s", code, err, readLog(t, dir))
	}
}

// Stopping the service (ctx) kills the program and exits 0. The program
// says it runs before ctx is cancelled (a line through a FIFO, which the
// test's read waits for), so the stop is the one that ends it.
func TestStoppingKillsTheProgram(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	c, resolve := shell(t, dir, "echo up > "+ready+"; exec sleep 600")
	cmd, log, err := c.command(resolve)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := supervise(ctx, cmd, log)
		done <- result{code, err}
	}()
	if b, err := os.ReadFile(ready); err != nil || string(b) != "up\n" { // returns once the program wrote
		t.Fatalf("the program never said it runs: %q %v", b, err)
	}
	cancel()
	r := <-done
	log.Close()
	if r.code != 0 || r.err != nil || !strings.Contains(readLog(t, dir), "the service was stopped") {
		t.Errorf("stopped: exit %d (%v), want 0; log:\n%s", r.code, r.err, readLog(t, dir))
	}
}

// A program that is not there fails to start, named in the log and the
// error.
func TestAMissingProgramIsNamed(t *testing.T) {
	dir := t.TempDir()
	c, _, err := Parse([]string{"--name", "t", "--log-file", `C:\var\log\t\t.log`, "--", `C:\k\missing.exe`})
	if err != nil {
		t.Fatal(err)
	}
	_, resolve := shell(t, dir, "")
	cmd, log, err := c.command(resolve)
	if err != nil {
		t.Fatal(err)
	}
	code, err := supervise(context.Background(), cmd, log)
	log.Close()
	if code != 1 || err == nil || !strings.Contains(err.Error(), `C:\k\missing.exe`) || !strings.Contains(readLog(t, dir), `starting C:\k\missing.exe`) {
		t.Errorf("exit %d (%v); log:\n%s", code, err, readLog(t, dir))
	}
}

// shellBefore is shell with a --before program, C:\bin\sh.exe running
// beforeScript.
func shellBefore(t *testing.T, dir, beforeScript, script string) (Command, func(string) (string, error)) {
	t.Helper()
	c, resolve := shell(t, dir, script)
	withBefore, _, err := Parse([]string{"--name", "t", "--log-file", `C:\var\log\t\t.log`, "--before", `C:\bin\sh.exe`, "--before-arg", "-c", "--before-arg", beforeScript,
		"--", `C:\bin\sh.exe`, "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	if !slicesEqual(withBefore.Before, []string{`C:\bin\sh.exe`, "-c", beforeScript}) {
		t.Fatalf("--before parsed as %q", withBefore.Before)
	}
	c.Before = withBefore.Before
	return c, resolve
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// serveWith runs c as Run does, through serve.
func serveWith(ctx context.Context, t *testing.T, c Command, resolve func(string) (string, error)) (int, error) {
	t.Helper()
	cmd, log, err := c.command(resolve)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	before, err := c.beforeCommand(ctx, resolve, log)
	if err != nil {
		t.Fatal(err)
	}
	return serve(ctx, before, cmd, log)
}

// --before runs to its end before the program: what it writes is there
// when the program starts (kube-proxy's configuration, written by
// pod-network), and its output is in the service's log.
func TestBeforeRunsFirst(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "written-before")
	c, resolve := shellBefore(t, dir, "echo from-before; echo x > "+marker, "test -f "+marker+" && exit 4; exit 5")
	code, err := serveWith(context.Background(), t, c, resolve)
	if code != 4 || err == nil {
		t.Errorf("exit %d (%v), want 4: the program did not find what --before wrote", code, err)
	}
	if text := readLog(t, dir); !strings.Contains(text, "from-before") || !strings.Contains(text, "running C:\\bin\\sh.exe -c") {
		t.Errorf("log:\n%s", text)
	}
}

// A --before that fails fails the service, and the program never starts:
// Windows' recovery actions start the service again.
func TestBeforeFailingFailsTheService(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "program-ran")
	c, resolve := shellBefore(t, dir, "exit 7", "echo x > "+marker+"; sleep 600")
	code, err := serveWith(context.Background(), t, c, resolve)
	if code != 1 || err == nil || !strings.Contains(readLog(t, dir), "is not started") {
		t.Errorf("exit %d (%v), want 1; log:\n%s", code, err, readLog(t, dir))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran after --before failed")
	}
}

// Stopping the service while --before runs (pod-network waiting for the
// node's subnet) ends it, and the service stops with 0.
func TestStoppingDuringBefore(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	c, resolve := shellBefore(t, dir, "echo up > "+ready+"; exec sleep 600", "exit 9")
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := serveWith(ctx, t, c, resolve)
		done <- result{code, err}
	}()
	if b, err := os.ReadFile(ready); err != nil || string(b) != "up\n" {
		t.Fatalf("--before never said it runs: %q %v", b, err)
	}
	cancel()
	if r := <-done; r.code != 0 || r.err != nil {
		t.Errorf("stopped during --before: exit %d (%v), want 0; log:\n%s", r.code, r.err, readLog(t, dir))
	}
}
