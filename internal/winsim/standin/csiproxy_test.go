package standin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/testkit"
)

// The stand-in takes the command line winnode renders and refuses what the
// real csi-proxy refuses, with Go's flag package's words.
func TestCSIProxyFlags(t *testing.T) {
	f, err := parseCSIProxyFlags([]string{"-kubelet-path", `C:\var\lib\kubelet`, "-v=2", "--working-dir", `C:\csi`, "-working-dir", `D:\csi`})
	if err != nil || f.kubeletPath != `C:\var\lib\kubelet` || f.verbosity != 2 || len(f.workingDirs) != 2 || !f.logToStderr {
		t.Fatalf("winnode's command line: %+v, %v", f, err)
	}
	for _, bad := range [][]string{
		{"-kubelet-dir", `C:\var\lib\kubelet`},
		{"--log-file", `C:\x.log`}, // klog's is -log_file
		{"-windows-service=maybe"},
		{"-kubelet-path"},
	} {
		if _, err := parseCSIProxyFlags(bad); err == nil {
			t.Errorf("%q accepted; the real csi-proxy refuses it", bad)
		}
	}
	if _, err := parseCSIProxyFlags([]string{"-kubelet-dir", "x"}); err == nil || !strings.Contains(err.Error(), "flag provided but not defined: -kubelet-dir") {
		t.Errorf("unknown flag: %v", err)
	}
}

// With -logtostderr=false -log_file, csi-proxy writes its file, saying
// what the real one says at start, and that it is simulated.
func TestCSIProxyLogsToItsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "csi-proxy.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- runCSIProxy(ctx, []string{"-logtostderr=false", "-log_file", file, "-kubelet-path", `C:\var\lib\kubelet`})
	}()
	var data []byte
	testkit.Eventually(t, 10*time.Second, "csi-proxy's start lines in "+file, func() (bool, string) {
		data, _ = os.ReadFile(file)
		return strings.Contains(string(data), "Working directories"), string(data)
	})
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after a stop", code)
	}
	for _, want := range []string{"Starting CSI-Proxy Server ...", "Version: v1.1.3", `Working directories: %v[C:\var\lib\kubelet]`, "simulated"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the log lacks %q:\n%s", want, data)
		}
	}
}
