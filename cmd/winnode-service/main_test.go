package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/plan"
)

// --dry-run parses a service's command line with winnode-service's own
// parser and prints what it would run, running nothing: the Wine tier
// checks every plan's wrapped command line with it. The renderer's
// arguments (plan.ServiceArgs) are what it reads.
func TestDryRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := append([]string{"--dry-run"}, plan.ServiceArgs("kubelet", `C:\var\log\kubelet\kubelet.log`,
		logrotate.Limits{Size: 20 << 10, Age: 36e11}, `C:\k\kubelet.exe`, `--config=C:\k\kubelet.yaml`, "--v=2")...)
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var got struct {
		Name, LogFile, LogFileSize, LogFileAge, Program string
		Args                                            []string
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || got.Name != "kubelet" || got.LogFile != `C:\var\log\kubelet\kubelet.log` ||
		got.LogFileSize != "20480" || got.LogFileAge != "1h0m0s" ||
		got.Program != `C:\k\kubelet.exe` || strings.Join(got.Args, " ") != `--config=C:\k\kubelet.yaml --v=2` {
		t.Errorf("dry run printed %s (%v)", stdout.String(), err)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dry-run", "--name", "kubelet", "--", `kubelet.exe`}, "program"},
		{[]string{"--dry-run", "--name", "kubelet", "--log-file", "kubelet.log", "--", `C:\k\kubelet.exe`}, "--log-file"},
		{[]string{"--dry-run", "--", `C:\k\kubelet.exe`}, "--name"},
		{[]string{"--dry-run", "--name", "kubelet", "--logtostderr", "--", `C:\k\kubelet.exe`}, "unknown flag: --logtostderr"},
		{[]string{"--dry-run", "--name", "kubelet", "--log-file", `C:\l\k.log`, "--log-file-size", "125m", "--", `C:\k\kubelet.exe`}, "did you mean 125M?"},
		{[]string{"--dry-run", "--name", "kubelet", "--log-file", `C:\l\k.log`, "--log-file-age", "-1h", "--", `C:\k\kubelet.exe`}, "non-negative"},
		{[]string{"--dry-run", "--name", "kubelet", "--log-file-size", "1M", "--", `C:\k\kubelet.exe`}, "need --log-file"},
		{[]string{"--dry-run", "--name", "kube-proxy", "--before", `winnode-agent.exe`, "--", `C:\k\kube-proxy.exe`}, "--before"},
		{[]string{"--dry-run", "--name", "kube-proxy", "--before-arg", "pod-network", "--", `C:\k\kube-proxy.exe`}, "--before-arg needs --before"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "--log-file-size SIZE") {
		t.Errorf("--help: exit %d\n%s", code, stderr.String())
	}
}
