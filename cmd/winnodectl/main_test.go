//go:build linux

// The goldens are the Linux build's help: elsewhere the demo is a stand-in
// with help of its own (internal/demo/demo_other.go).

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/demo"
	"github.com/winnode/winnode/internal/testkit"
)

// TestHelpGolden keeps the help of every command, as the wired binary
// prints it, in testdata/help-*.golden: a change of a flag or a text shows
// in review.
func TestHelpGolden(t *testing.T) {
	for _, cmd := range []string{"", "demo", "add", "remove", "upgrade", "status", "userdata", "image", "ssh", "logs", "gather", "check"} {
		name := cmd
		if name == "" {
			name = "root"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"--help"}
			if cmd != "" {
				args = []string{cmd, "--help"}
			}
			var out, errOut bytes.Buffer
			s := cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}
			code := cli.Execute(context.Background(), args, s, demo.NewCommand(s))
			if code != cli.ExitOK || errOut.Len() != 0 {
				t.Fatalf("winnodectl %v: exit %d, stderr %q", args, code, errOut.String())
			}
			if !strings.Contains(out.String(), "Example") && cmd != "" {
				t.Errorf("winnodectl %s --help has no examples:\n%s", cmd, out.String())
			}
			testkit.Golden(t, "help-"+name+".golden", out.String())
		})
	}
}
