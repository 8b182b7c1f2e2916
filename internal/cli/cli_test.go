package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/winnode/winnode/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestMain stops the shared control plane (and built binaries) after the
// tests, as testenv requires of every package that uses testenv.Get.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // as Execute does for every command but demo
	testenv.Main(m)
}

// result is what one winnodectl run printed and returned.
type result struct {
	code     int
	out, err string
}

// run runs winnodectl in process with args and stdin.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return result{code: code, out: out.String(), err: errOut.String()}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run `go test ./internal/cli -run '%s' -update` to create it): %v", path, t.Name(), err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if the change is intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestHelpGolden(t *testing.T) {
	for _, cmd := range []string{"", "demo", "add", "remove", "upgrade", "status", "userdata", "ssh"} {
		name := cmd
		if name == "" {
			name = "root"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"--help"}
			if cmd != "" {
				args = []string{cmd, "--help"}
			}
			r := run(t, "", args...)
			if r.code != ExitOK || r.err != "" {
				t.Fatalf("winnodectl %v: exit %d, stderr %q", args, r.code, r.err)
			}
			if !strings.Contains(r.out, "Example") && cmd != "" {
				t.Errorf("winnodectl %s --help has no examples:\n%s", cmd, r.out)
			}
			golden(t, "help-"+name+".golden", r.out)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "extra"}, "takes no arguments"},
		{[]string{"status", "--output", "yaml"}, "unknown output format yaml"},
		{[]string{"status", "--no-such-flag"}, "unknown flag"},
		{[]string{"userdata"}, "--ssh-key FILE.pub is required"},
		{[]string{"ssh"}, "needs the host"},
		{[]string{"ssh", "node", "ipconfig"}, "put the command after --"},
		{[]string{"ssh", "node", "--"}, "nothing after --"},
		{[]string{"ssh", "a", "b", "--", "c"}, "one host before --"},
		{[]string{"no-such-command"}, "unknown command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, "", tc.args...)
			if r.code != ExitUsage && tc.args[0] != "no-such-command" {
				t.Errorf("exit code %d, want %d (usage); stderr %q", r.code, ExitUsage, r.err)
			}
			if r.code == ExitOK {
				t.Errorf("exit code 0 for a wrong command line")
			}
			if !strings.Contains(r.err, tc.want) {
				t.Errorf("stderr %q does not say %q", r.err, tc.want)
			}
		})
	}
}

// syncBuffer is a strings.Builder safe for the demo's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
