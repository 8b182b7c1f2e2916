package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

// The commands themselves are tested on simulated hosts
// (internal/agent/winsim_test.go); these check the command line's contract:
// one JSON document on stdout, help and logs on stderr, exit codes.
func TestCommandLineContract(t *testing.T) {
	t.Setenv("WINSIM_SCM", "")
	cases := []struct {
		args []string
		code int
		want string // error code, "" for success
	}{
		{[]string{"version"}, 0, ""},
		{[]string{"apply"}, 2, "Usage"},
		{[]string{"apply", "--plan"}, 2, "Usage"},
		{[]string{"bootstrap", "--ignition-file", "x"}, 2, "Usage"},
		{[]string{"frobnicate"}, 2, "Usage"},
		{[]string{"info", "extra"}, 2, "Usage"},
		{[]string{"remove", "--purge-logs=maybe"}, 2, "Usage"},
	}
	if runtime.GOOS != "windows" { // off Windows and off winsim there is no host to read
		cases = append(cases, struct {
			args []string
			code int
			want string
		}{[]string{"info"}, 1, "Host"})
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.code, stdout.String(), stderr.String())
			continue
		}
		var doc map[string]any
		dec := json.NewDecoder(&stdout)
		if err := dec.Decode(&doc); err != nil || dec.More() {
			t.Errorf("%v: stdout is not one JSON document: %v", tc.args, err)
			continue
		}
		if doc["schemaVersion"] != plan.SchemaVersion {
			t.Errorf("%v: schemaVersion %v", tc.args, doc["schemaVersion"])
		}
		if tc.want != "" {
			e, _ := doc["error"].(map[string]any)
			if e == nil || e["code"] != tc.want {
				t.Errorf("%v: error %v, want code %s", tc.args, doc["error"], tc.want)
			}
		}
	}
}

// run-service --dry-run parses a service's command line with the agent's
// own parser and prints what it would run, running nothing: the Wine tier
// checks the plans' run-service command lines with it.
func TestRunServiceDryRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"run-service", "--dry-run", "--name", "kubelet", "--log-file", `C:\var\log\kubelet\kubelet.log`, "--", `C:\k\kubelet.exe`, "--config=C:\\k\\kubelet.yaml", "--v=2"}
	if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var got struct {
		Name, LogFile, Program string
		Args                   []string
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || got.Name != "kubelet" || got.LogFile != `C:\var\log\kubelet\kubelet.log` ||
		got.Program != `C:\k\kubelet.exe` || strings.Join(got.Args, " ") != `--config=C:\k\kubelet.yaml --v=2` {
		t.Errorf("dry run printed %s (%v)", stdout.String(), err)
	}
	for _, bad := range [][]string{
		{"run-service", "--dry-run", "--name", "kubelet", "--", `kubelet.exe`},
		{"run-service", "--dry-run", "--name", "kubelet", "--log-file", "kubelet.log", "--", `C:\k\kubelet.exe`},
		{"run-service", "--dry-run", "--", `C:\k\kubelet.exe`},
		{"run-service", "--dry-run", "--name", "kubelet", "--logtostderr", "--", `C:\k\kubelet.exe`},
	} {
		stdout.Reset()
		if code := run(context.Background(), bad, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stdout.String(), `"Usage"`) {
			t.Errorf("%v: exit %d, %s; want a Usage error", bad, code, stdout.String())
		}
	}
}
