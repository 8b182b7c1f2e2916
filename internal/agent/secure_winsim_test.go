//go:build !windows

package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winsim/acl"
)

// applyFails runs apply, which must fail with code; it returns the error.
func (s *simHost) applyFails(p *plan.Plan, code plan.ErrorCode) plan.Error {
	s.t.Helper()
	data, _ := json.Marshal(p)
	s.put(`C:\k\plan.json`, data)
	out, exit := s.agent("apply", "--plan", `C:\k\plan.json`)
	var fail plan.ErrorDocument
	if exit != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != code {
		s.t.Fatalf("apply: exit %d, %s; want error %s", exit, out, code)
	}
	return fail.Error
}

// Issue 11: a local user who is not an administrator can write below C:\
// (Windows' default ACL). The agent refuses winnode's folders when such a
// user owns one of them, a folder above one, or a file directly in one; it
// deletes what the user put in the staging folder; and once it has applied,
// the user can neither write in winnode's folders nor read what is there.
func TestApplySecuresFoldersAgainstLocalUser(t *testing.T) {
	h := newSimHost(t)
	tp := newTestPlan(t, "v1")
	h.stage(tp.contents)
	bob := h.host.LocalUser("bob", 1)
	// Before winnode secures anything, bob can plant a DLL next to the
	// binaries, a blob in the staging folder, and own C:\var.
	for _, f := range []string{`C:\k\version.dll`, plan.DefaultStagingDir + `\0000`} {
		if err := bob.WriteFile(f, []byte("planted")); err != nil {
			t.Fatalf("bob writes %s before winnode secures it: %v", f, err)
		}
	}
	if err := bob.Mkdir(`C:\var`); err != nil {
		t.Fatalf("bob creates C:\\var: %v", err)
	}

	for _, want := range []string{`C:\k\version.dll`, `C:\var`} {
		e := h.applyFails(tp.plan, plan.ErrUntrustedFolder)
		if e.File != want {
			t.Fatalf("UntrustedFolder names %q, want %q (%s)", e.File, want, e.Message)
		}
		if _, err := h.scm.Get(context.Background(), "svc-a"); !errors.Is(err, simscm.ErrNotFound) {
			t.Fatalf("a service was created although %s is untrusted: %v", want, err)
		}
		local, _ := h.host.Path(want)
		if err := os.RemoveAll(local); err != nil { // what the error says to do
			t.Fatal(err)
		}
	}
	h.apply(tp.plan)
	if h.exists(plan.DefaultStagingDir + `\0000`) {
		t.Errorf("the blob bob put in the staging folder is still there")
	}
	owner, dacl, err := h.host.Security().Get(`C:\k`)
	if owner != acl.Administrators || dacl != "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)" || err != nil {
		t.Errorf(`C:\k: owner %s, DACL %s, %v`, owner, dacl, err)
	}

	// Secured: bob is denied everything in winnode's folders.
	denied := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, acl.ErrAccessDenied) {
			t.Errorf("bob %s: %v, want %v", what, err, acl.ErrAccessDenied)
		}
	}
	denied(`writes C:\k\version.dll`, bob.WriteFile(`C:\k\version.dll`, nil))
	denied(`overwrites C:\k\svc-a.exe`, bob.WriteFile(`C:\k\svc-a.exe`, nil))
	denied(`writes in the staging folder`, bob.WriteFile(plan.DefaultStagingDir+`\0000`, nil))
	denied(`creates C:\var\lib\kubelet\pki`, bob.Mkdir(`C:\var\lib\kubelet\pki`))
	_, err = bob.ReadFile(`C:\k\a.conf`)
	denied(`reads C:\k\a.conf`, err)
	_, err = bob.ReadFile(`C:\ProgramData\winnode\state.json`)
	denied(`reads the agent's state`, err)

	// Nothing to do the second time: the descriptors stay as they are.
	before, _ := os.ReadFile(h.host.StateDir() + "/security.json")
	h.apply(tp.plan)
	if after, _ := os.ReadFile(h.host.StateDir() + "/security.json"); string(after) != string(before) {
		t.Errorf("a second apply rewrote security descriptors")
	}
}

// Remove secures the folders before it reads the state file too: a folder
// a local user owns stops it before anything is deleted.
func TestRemoveRefusesFolderALocalUserOwns(t *testing.T) {
	h := newSimHost(t)
	if err := h.host.LocalUser("bob", 1).Mkdir(`C:\ProgramData\winnode`); err != nil {
		t.Fatalf("bob creates C:\\ProgramData\\winnode: %v", err)
	}
	out, exit := h.agent("remove")
	var fail plan.ErrorDocument
	if exit != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrUntrustedFolder || fail.Error.File != `C:\ProgramData\winnode` {
		t.Fatalf("remove: exit %d, %s; want UntrustedFolder naming C:\\ProgramData\\winnode", exit, out)
	}
}
