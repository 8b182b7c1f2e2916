package e2e

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim/acl"
)

// Issue 11, "What runs as Administrator": a local user of the host who is
// not an administrator (bob) pre-creates C:\k and plants a DLL in it. The
// instance fails naming the folder, and no service is started. Once the
// folder is deleted (what the error says to do) the host becomes Ready,
// and bob can then neither replace kubelet.exe, nor write in C:\k, nor read
// the node's credentials. The winnode-agent.exe bob planted is never run:
// the agent's first run is from the administrator's profile folder, and
// nothing runs from where bob could write (checkNoUnsafeExecs, for every
// host of every test).
func TestLocalUserCannotTamperWithWinnodeFolders(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	bob := h.LocalUser("bob", 1)
	if err := bob.Mkdir(`C:\k`); err != nil {
		t.Fatalf("bob creates C:\\k (Windows' default ACL of C:\\ allows it): %v", err)
	}
	if err := bob.WriteFile(`C:\k\version.dll`, []byte("planted")); err != nil {
		t.Fatal(err)
	}
	// bob's own "agent": a program (a Linux one, as every program on a
	// simulated host) that leaves a mark beside itself if anyone runs it.
	if err := bob.WriteFile(`C:\k\winnode-agent.exe`, []byte("#!/bin/sh\necho ran > \"$0.ran\"\n")); err != nil {
		t.Fatal(err)
	}
	if err := bob.Mkdir(`C:\Program Files\winnode`); !errors.Is(err, acl.ErrAccessDenied) {
		t.Errorf("bob creates C:\\Program Files\\winnode: %v, want %v", err, acl.ErrAccessDenied)
	}
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "tampered", h)
	testkit.Eventually(t, 3*time.Minute, "the instance to fail on the untrusted folder", func() (bool, string) {
		inst := w.get(t, "tampered")
		return strings.Contains(inst.Status.LastError, string(plan.ErrUntrustedFolder)) && strings.Contains(inst.Status.LastError, `C:\k`),
			fmt.Sprintf("phase %s step %s lastError %q", inst.Status.Phase, inst.Status.Step, inst.Status.LastError)
	})
	if _, err := h.Services().Get("kubelet"); err == nil {
		t.Errorf("the kubelet service exists although C:\\k is untrusted")
	}
	if hostFileExists(t, h, `C:\k\winnode-agent.exe.ran`) {
		t.Errorf("the operator ran the winnode-agent.exe bob planted in C:\\k")
	}

	local, err := h.Path(`C:\k`)
	if err != nil {
		t.Fatal(err)
	}
	// The administrator moves bob's folder aside to inspect it (moved, not
	// deleted: the simulator tells a re-created C:\k from bob's by its
	// inode, which a deleted folder would free for reuse).
	if err := os.Rename(local, local+".bob"); err != nil {
		t.Fatal(err)
	}
	inst := w.waitReady(t, "tampered", 3*time.Minute)
	if inst.Status.Phase != winnodev1.PhaseReady {
		t.Fatalf("phase %s", inst.Status.Phase)
	}
	denied := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, acl.ErrAccessDenied) {
			t.Errorf("bob %s: %v, want %v", what, err, acl.ErrAccessDenied)
		}
	}
	denied(`replaces C:\k\kubelet.exe`, bob.WriteFile(`C:\k\kubelet.exe`, []byte("evil")))
	denied(`creates C:\k\version.dll`, bob.WriteFile(`C:\k\version.dll`, []byte("evil")))
	for _, p := range []string{plan.BootstrapKubeconfigPath, plan.KubeconfigPath, plan.KubeletCertDir + `\kubelet-client-current.pem`} {
		if hostFileExists(t, h, p) {
			_, err := bob.ReadFile(p)
			denied("reads "+p, err)
		}
	}
	if left := hostFileExists(t, h, h.Profile()+`\winnode-agent.exe`); !inst.Status.AgentSecured || left {
		t.Errorf("status.agentSecured %v; the agent's copy in the profile folder still there: %v", inst.Status.AgentSecured, left)
	}

	// Someone deletes the agent: its first run is repeated, from the
	// profile folder, and the host stays Ready.
	op.stop()
	agentFile, _ := h.Path(`C:\k\winnode-agent.exe`)
	if err := os.Remove(agentFile); err != nil {
		t.Fatal(err)
	}
	w.startOperator(t, operatorOptions{})
	testkit.Eventually(t, 3*time.Minute, "the agent back in C:\\k", func() (bool, string) {
		return hostFileExists(t, h, `C:\k\winnode-agent.exe`), ""
	})
	w.waitReady(t, "tampered", 3*time.Minute)
}
