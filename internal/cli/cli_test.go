package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/winnode/winnode/internal/testenv"
)

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
// simHosts permits the simulated hosts' loopback addresses (127.0.0.10 and
// up), which add, upgrade and remove refuse unless --allow-addresses
// permits them.
const simHosts = "127.0.0.0/8"

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return result{code: code, out: out.String(), err: errOut.String()}
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
		{[]string{"image"}, "--output DIR is required"},
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
