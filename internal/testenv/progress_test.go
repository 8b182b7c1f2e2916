package testenv

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBuildProgress runs hack/lib/progress.sh's with_progress, which the
// build scripts wrap around each `go build` of a program the tests and the
// demo need: while the command runs (here: until the test answers it),
// a line at every interval names the program and the time so far; the
// command's status and output are the script's.
func TestBuildProgress(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := `set -euo pipefail
say() { echo "build-test: $*" >&2; }
source "$1"
with_progress "[2/4] kube-apiserver" read -r answer
echo "the command read $answer"
with_progress "[3/4] kube-controller-manager" false || echo "status $?"
echo done`
	cmd := exec.Command("bash", "-c", script, "bash", filepath.Join(root, "hack", "lib", "progress.sh"))
	cmd.Env = append(cmd.Environ(), "WINNODE_PROGRESS_SECONDS=0.1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Two progress lines, then the build is let go.
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	for ticks := 0; ticks < 2; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the script ended while its command waited; it printed:\n%s", strings.Join(got, "\n"))
			}
			got = append(got, line)
			if !strings.HasPrefix(line, "build-test: [2/4] kube-apiserver: still building, ") || !strings.HasSuffix(line, "s so far") {
				t.Fatalf("progress line %q, want \"build-test: [2/4] kube-apiserver: still building, <time> so far\"", line)
			}
			ticks++
		case <-time.After(time.Minute):
			t.Fatalf("no progress line within a minute of an interval of 0.1 s; it printed:\n%s", strings.Join(got, "\n"))
		}
	}
	if _, err := io.WriteString(stdin, "42\n"); err != nil {
		t.Fatal(err)
	}
	var after []string
	for line := range lines {
		after = append(after, line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the script failed: %v\nstderr after the answer:\n%s", err, strings.Join(after, "\n"))
	}
	if want := "the command read 42\nstatus 1\ndone\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
}
