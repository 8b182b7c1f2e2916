package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
)

// winnodectl runs winnodectl against the world's cluster, with the
// operator's namespace (its key, Secret cloud-private-key).
func (w *world) winnodectl(args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	args = append(args, "--kubeconfig", w.env.KubeconfigPath, "--namespace", Namespace)
	code = cli.Execute(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// TestServiceLogsRotate: with the operator's --log-file-size at 2 KB,
// winnode-service.exe rotates the kubelet's log as it grows, and a restart
// of the service deletes the copies older than --log-file-age (a copy
// planted with a 2020 time) and keeps the newer ones. csi-proxy logs to
// its own folder. winnodectl logs reads a log over SSH through the agent
// (the test world's API server cannot reach a kubelet), with --tail
// applied, and names a log that is not there.
func TestServiceLogsRotate(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{logs: &logrotate.Limits{Size: 2000, Age: time.Hour}})
	w.instanceFor(t, "rotating", h)
	w.waitReady(t, "rotating", 3*time.Minute)

	current, err := h.Path(plan.KubeletLogFile)
	if err != nil {
		t.Fatal(err)
	}
	backups := func() []string { b, _ := logrotate.Backups(current); return b }
	testkit.Eventually(t, 3*time.Minute, "a rotated copy of the kubelet's log", func() (bool, string) {
		return len(backups()) > 0, strings.Join(backups(), ", ")
	})
	for _, b := range backups() {
		if fi, err := os.Stat(b); err != nil || fi.Size() > 2000+logrotate.Slack {
			t.Errorf("rotated copy %s: %v, %v bytes; want at most the size limit and a line", b, err, fi.Size())
		}
	}

	// A copy last written in 2020 goes at the next opening of the log;
	// the newer copies stay.
	planted := filepath.Join(filepath.Dir(current), "kubelet-20200101-000000.log")
	if err := os.WriteFile(planted, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(planted, old, old); err != nil {
		t.Fatal(err)
	}
	newer := backups()
	if err := h.CrashService(plan.KubeletService); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Minute, "the 2020 copy deleted by the restarted kubelet service", func() (bool, string) {
		_, err := os.Stat(planted)
		return os.IsNotExist(err), strings.Join(backups(), ", ")
	})
	for _, b := range newer {
		if _, err := os.Stat(b); err != nil && b != planted {
			t.Errorf("copy %s, newer than the age limit, was deleted: %v", b, err)
		}
	}

	checkLogsOverSSH(t, w)
}

// checkLogsOverSSH reads the host's logs with winnodectl logs.
func checkLogsOverSSH(t *testing.T, w *world) {
	t.Helper()
	code, out, errOut := w.winnodectl("logs", "rotating", "kubelet", "--tail", "3")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(errOut, "over SSH") {
		t.Errorf("winnodectl logs --tail 3: exit %d, %d lines, stdout:\n%s\nstderr: %s", code, len(lines), out, errOut)
	}
	code, out, errOut = w.winnodectl("logs", "rotating", "csi-proxy")
	if code != 0 || !strings.Contains(out, "Starting CSI-Proxy Server") {
		t.Errorf("winnodectl logs csi-proxy: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	code, _, errOut = w.winnodectl("logs", "rotating", "no-such-service")
	if code == 0 || !strings.Contains(errOut, `C:\var\log\no-such-service\no-such-service.log`) {
		t.Errorf("winnodectl logs of a service with no log: exit %d, stderr %s; want a failure naming the file", code, errOut)
	}
	code, _, errOut = w.winnodectl("logs", "rotating", "--tail", "-5")
	if code != cli.ExitUsage {
		t.Errorf("--tail -5: exit %d (%s), want %d", code, errOut, cli.ExitUsage)
	}
}
