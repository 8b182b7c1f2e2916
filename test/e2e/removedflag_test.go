package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/testkit"
)

// TestKubeletRefusesARemovedFlag: the stand-in kubelet refuses a flag the
// real kubelet refuses (--logtostderr, which Kubernetes removed in v1.26),
// with the real kubelet's words; the kubelet service does not come up, and
// the instance reports it with those words, then the operator puts the
// plan's command line back.
//
// How the flag reaches the kubelet's command line: winnode itself never
// renders it (the Wine tier's contract check runs the real kubelet on every
// command line the renderer produces), so the test plays an administrator
// who changes the kubelet service's command line on the host, as
// `sc.exe config kubelet binPath= "..."` does (through the simulated
// service control manager's Update, which keeps a running service as it
// is), after which the kubelet restarts (here a crash: Windows' recovery
// action starts it again with the new command line). The Node goes
// NotReady; the operator's next look at the host (the Node's change
// enqueues the instance) finds the service not Running in the agent's info,
// with the end of its log, and records event ServiceNotRunning; the apply
// that follows restores the plan's command line.
func TestKubeletRefusesARemovedFlag(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "flagged", h)
	inst := w.waitReady(t, "flagged", 3*time.Minute)

	ctx := context.Background()
	scm := h.SCM()
	svc, err := scm.Get(ctx, "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	planned := svc.Config.BinaryPathName
	edited := svc.Config
	edited.BinaryPathName = planned + " --logtostderr=false"
	if err := scm.Update(ctx, edited); err != nil {
		t.Fatalf("changing the kubelet's command line as sc.exe config would: %v", err)
	}
	if err := h.CrashService("kubelet"); err != nil {
		t.Fatal(err)
	}

	const words = "failed to parse kubelet flag: unknown flag: --logtostderr"
	testkit.Eventually(t, 3*time.Minute, "event "+configure.EventReasonServiceNotRunning+" quoting the kubelet's refusal", func() (bool, string) {
		var msgs []string
		for _, e := range w.events(t, metav1.NamespaceDefault, "flagged") {
			// This instance's (an earlier one of the same name may
			// have left events).
			if e.InvolvedObject.UID != inst.UID || e.Reason != configure.EventReasonServiceNotRunning {
				continue
			}
			if strings.Contains(e.Message, "service kubelet on") && strings.Contains(e.Message, words) {
				return true, e.Message
			}
			msgs = append(msgs, e.Message)
		}
		return false, fmt.Sprintf("events %v", msgs)
	})
	if log := hostFile(t, h, `C:\var\log\kubelet\kubelet.log`); !strings.Contains(string(log), words) {
		t.Errorf("the kubelet's log lacks %q", words)
	}
	// What an administrator reads when a node is not Ready: the kubelet's
	// refusal, over SSH through the agent (no kubelet serves it).
	code, out, errOut := w.winnodectl("logs", "flagged", "--tail", "20")
	if code != 0 || !strings.Contains(out, words) || !strings.Contains(errOut, "over SSH") {
		t.Errorf("winnodectl logs of the failing kubelet: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}

	// The operator applies the plan again: the kubelet's own command line
	// (the instance may still read Ready until the operator acts, so the
	// service's configuration is what is waited for), then Ready.
	testkit.Eventually(t, 3*time.Minute, "the plan's kubelet command line put back", func() (bool, string) {
		svc, err := scm.Get(ctx, "kubelet")
		return err == nil && svc.Config.BinaryPathName == planned, fmt.Sprintf("%q %v", svc.Config.BinaryPathName, err)
	})
	w.converged(t, "flagged", h)
}
