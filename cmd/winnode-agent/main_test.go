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
