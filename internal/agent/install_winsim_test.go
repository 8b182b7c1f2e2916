//go:build !windows

package agent_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

// Issue 11: the agent's first run is from the administrator's profile
// folder. `install` secures winnode's folders, copies the agent into C:\k
// and reports the host's facts; run from C:\k before that, the agent runs
// from where local users may write, which the simulator reports.
func TestInstallFromProfileFolder(t *testing.T) {
	h := newSimHost(t)
	// newSimHost put the agent in C:\k as a plain upload would: C:\k then
	// inherits C:\'s ACL, which lets local users write there.
	h.agent("info")
	if len(h.host.UnsafeExecs()) != 1 {
		t.Fatalf("running the agent from an unsecured C:\\k: unsafe execs %v, want that one", h.host.UnsafeExecs())
	}
	local, _ := h.host.Path(`C:\k`)
	if err := os.RemoveAll(local); err != nil {
		t.Fatal(err)
	}
	profileAgent := h.host.Profile() + `\winnode-agent.exe`
	binary := readFile(t, h.agentBinary())
	h.put(profileAgent, binary)

	out, code := h.run(profileAgent, "install", "--to", agentPath)
	var info plan.Info
	if code != 0 || json.Unmarshal(out, &info) != nil || info.Hostname != h.host.Hostname() {
		t.Fatalf("install: exit %d, %s", code, out)
	}
	if got := readFile(t, mustPath(t, h, agentPath)); !bytes.Equal(got, binary) {
		t.Errorf("install copied %d bytes to %s, want the agent's %d", len(got), agentPath, len(binary))
	}
	if _, dacl, _ := h.host.Security().Get(`C:\k`); dacl != "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)" {
		t.Errorf("C:\\k's DACL after install = %q, want SYSTEM and Administrators only", dacl)
	}
	h.agent("info")
	if n := len(h.host.UnsafeExecs()); n != 1 {
		t.Errorf("unsafe execs after install %v: the runs from the profile folder and the secured C:\\k are safe", h.host.UnsafeExecs()[1:])
	}

	// Only into winnode's folders.
	out, code = h.run(profileAgent, "install", "--to", `C:\Windows\winnode-agent.exe`)
	var fail plan.ErrorDocument
	if code == 0 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrUsage {
		t.Errorf("install --to C:\\Windows: exit %d, %s; want error Usage", code, out)
	}
}

// A C:\k that a local user created is refused before the agent is copied
// into it.
func TestInstallRefusesUsersFolder(t *testing.T) {
	h := newSimHost(t)
	local, _ := h.host.Path(`C:\k`)
	if err := os.RemoveAll(local); err != nil {
		t.Fatal(err)
	}
	if err := h.host.LocalUser("bob", 1).Mkdir(`C:\k`); err != nil {
		t.Fatal(err)
	}
	profileAgent := h.host.Profile() + `\winnode-agent.exe`
	h.put(profileAgent, readFile(t, h.agentBinary()))
	out, code := h.run(profileAgent, "install", "--to", agentPath)
	var fail plan.ErrorDocument
	if code != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrUntrustedFolder || fail.Error.File != `C:\k` {
		t.Fatalf("install into bob's C:\\k: exit %d, %s; want UntrustedFolder naming C:\\k", code, out)
	}
	if h.exists(agentPath) {
		t.Errorf("the agent was copied into bob's C:\\k")
	}
	if execs := h.host.UnsafeExecs(); len(execs) != 0 {
		t.Errorf("unsafe execs %v", execs)
	}
}

func mustPath(t *testing.T, h *simHost, winPath string) string {
	t.Helper()
	p, err := h.host.Path(winPath)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
