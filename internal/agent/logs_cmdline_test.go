package agent

import (
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

// A service's log is its program's own --logfile when it names one
// (hybrid-overlay-node, wrapped or not), else the wrapper's --log-file.
func TestLogFileInCommandLine(t *testing.T) {
	for _, tc := range []struct{ cmdline, want string }{
		{`C:\k\winnode-service.exe --name kube-proxy --log-file C:\var\log\kube-proxy\kube-proxy.log -- C:\k\kube-proxy.exe --config=C:\k\kube-proxy.yaml`, plan.KubeProxyLogFile},
		{`C:\k\winnode-service.exe --name hybrid-overlay-node --log-file C:\var\log\hybrid-overlay-node\hybrid-overlay-node.log --before C:\k\winnode-agent.exe --before-arg pod-network -- C:\k\hybrid-overlay-node.exe --node win-1 --logfile C:\var\log\hybrid-overlay\hybrid-overlay.log`, plan.HybridOverlayLogFile},
		{`C:\k\hybrid-overlay-node.exe --node win-1 --windows-service --logfile C:\var\log\hybrid-overlay\hybrid-overlay.log`, plan.HybridOverlayLogFile},
		{`C:\k\csi-proxy.exe -v=2`, ""},
		{`C:\k\winnode-service.exe --name x --log-file`, ""},
	} {
		if got := logFileInCommandLine(tc.cmdline); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.cmdline, got, tc.want)
		}
	}
}
