//go:build !windows

package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
)

// The agent's state file (C:\ProgramData\winnode\state.json) tells it what
// to delete, as Administrator. These tests plant states that something other
// than the agent could have written, and check that the agent deletes
// nothing outside winnode's folders and no service winnode did not create.

const statePath = `C:\ProgramData\winnode\state.json`

// addSSHD registers a stopped "sshd" service as Windows' OpenSSH Server
// install registers it (its description is OpenSSH's own).
func addSSHD(t *testing.T, h *simHost) {
	t.Helper()
	err := h.scm.Create(context.Background(), simscm.Config{
		Name: "sshd", DisplayName: "OpenSSH SSH Server",
		Description:    "SSH protocol based service to provide secure encrypted communications between two untrusted hosts over unsecured network.",
		BinaryPathName: `C:\Windows\System32\OpenSSH\sshd.exe`, StartType: plan.StartManual,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// plantState writes the agent's state as an attacker (or a damaged disk)
// would: the applied plan is p.
func plantState(t *testing.T, h *simHost, p *plan.Plan) {
	t.Helper()
	data, err := json.Marshal(agent.State{SchemaVersion: plan.SchemaVersion, Applied: p, Manifest: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	h.put(statePath, data)
}

// plantedPlan is the test plan plus what a planted state may name and
// still pass plan validation: the sshd service and its binary, files on
// another drive and outside winnode's folders, and foreign folders.
func plantedPlan(t *testing.T) *plan.Plan {
	p := newTestPlan(t, "planted").plan
	outside := []string{`C:\Program Files\OpenSSH\sshd.exe`, `C:\Users\Administrator\.ssh\authorized_keys`, `D:\x`}
	for _, f := range outside {
		p.Files = append(p.Files, plan.File{Path: f, SHA256: strings.Repeat("a", 64), Size: 1})
	}
	p.Directories = append(p.Directories, plan.Directory{Path: `C:\Users`}, plan.Directory{Path: `D:\data`}, plan.Directory{Path: `D:\logs`, Logs: true})
	p.StagingDir = `C:\ProgramData\ssh`
	p.Services = append(p.Services, plan.Service{Name: "sshd", Binary: outside[0], StartType: plan.StartManual})
	return p
}

func TestPlantedStateDeletesNothingOutsideWinnode(t *testing.T) {
	h := newSimHost(t)
	addSSHD(t, h)
	foreign := []string{`C:\Users\Administrator\.ssh\authorized_keys`, `C:\ProgramData\ssh\sshd_config`, `C:\Users\Public\x`}
	for _, f := range foreign {
		h.put(f, []byte("not winnode's\n"))
	}
	tp := newTestPlan(t, "v1")
	h.stage(tp.contents)
	h.apply(tp.plan)

	// apply: sshd and the foreign files are stale in the planted state.
	plantState(t, h, plantedPlan(t))
	tp.plan.Services = tp.plan.Services[:2] // drops svc-c: winnode's, deleted
	tp.plan.Version = "v2"
	data, _ := json.Marshal(tp.plan)
	h.put(`C:\k\plan.json`, data)
	out, code := h.agent("apply", "--plan", `C:\k\plan.json`)
	checkUntouched(t, h, foreign)
	var res plan.Result
	if code != 0 || json.Unmarshal(out, &res) != nil {
		t.Fatalf("apply: exit %d: %s", code, out)
	}
	if byName(res)["svc-c"].Action != plan.ServiceRemoved {
		t.Errorf("svc-c, winnode's, was not removed: %+v", res.Services)
	}
	warnings := strings.Join(res.Warnings, "\n")
	for _, want := range []string{"not deleting service sshd", `not deleting D:\x`, `not deleting C:\Program Files\OpenSSH\sshd.exe`} {
		if !strings.Contains(warnings, want) {
			t.Errorf("apply's warnings lack %q:\n%s", want, warnings)
		}
	}

	// remove: everything the planted state names outside winnode's.
	plantState(t, h, plantedPlan(t))
	out, code = h.agent("remove")
	checkUntouched(t, h, foreign)
	var rm plan.Result
	if code != 0 || json.Unmarshal(out, &rm) != nil {
		t.Fatalf("remove: exit %d: %s", code, out)
	}
	warnings = strings.Join(rm.Warnings, "\n")
	for _, want := range []string{"not deleting service sshd", `not deleting C:\Users,`, `not deleting C:\ProgramData\ssh,`} {
		if !strings.Contains(warnings, want) {
			t.Errorf("remove's warnings lack %q:\n%s", want, warnings)
		}
	}
	if h.exists(`C:\k\svc-a.exe`) {
		t.Errorf(`remove left C:\k\svc-a.exe, which is in winnode's folder`)
	}
}

// checkUntouched fails unless sshd is still installed and every foreign
// file is still there.
func checkUntouched(t *testing.T, h *simHost, foreign []string) {
	t.Helper()
	if _, err := h.scm.Get(context.Background(), "sshd"); err != nil {
		t.Errorf("sshd, named by a planted state, was deleted: %v", err)
	}
	for _, f := range foreign {
		if !h.exists(f) {
			t.Errorf("%s, outside winnode's folders, was deleted", f)
		}
	}
}

func TestUntrustedStateIsSetAside(t *testing.T) {
	windowsPlan := func(t *testing.T) *plan.Plan {
		p := newTestPlan(t, "planted").plan
		p.Files = append(p.Files, plan.File{Path: `C:\Windows\System32\config\SAM`, SHA256: strings.Repeat("a", 64), Size: 1})
		p.Directories = append(p.Directories, plan.Directory{Path: `C:\k\..\Windows`})
		return p
	}
	for name, state := range map[string]func(t *testing.T) []byte{
		"not JSON": func(*testing.T) []byte { return []byte(`{"schemaVersion": "winnode.io/v1", "applied": {`) },
		"another schema version": func(*testing.T) []byte {
			return []byte(`{"schemaVersion": "winnode.io/v9", "manifest": {}}`)
		},
		"an unknown field": func(*testing.T) []byte {
			return []byte(`{"schemaVersion": "winnode.io/v1", "manifest": {}, "deleteAlso": ["C:\\Windows"]}`)
		},
		`paths under C:\Windows`: func(t *testing.T) []byte {
			data, _ := json.Marshal(agent.State{SchemaVersion: plan.SchemaVersion, Applied: windowsPlan(t), Manifest: map[string]string{}})
			return data
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newSimHost(t)
			addSSHD(t, h)
			foreign := []string{`C:\Windows\System32\config\SAM`, `C:\Windows\win.ini`}
			for _, f := range foreign {
				h.put(f, []byte("Windows'\n"))
			}
			h.put(statePath, state(t))

			// remove refuses, naming the file, and deletes nothing.
			out, code := h.agent("remove")
			var fail plan.ErrorDocument
			if code != 1 || json.Unmarshal(out, &fail) != nil || fail.Error.Code != plan.ErrStateInvalid || fail.Error.File != statePath ||
				!strings.Contains(fail.Error.Message, "nothing was deleted") {
				t.Errorf("remove with an untrusted state: exit %d: %s", code, out)
			}
			checkUntouched(t, h, foreign)

			// info shows no installed plan, and why.
			if info := h.info(); info.InstalledPlan != nil || len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], statePath) {
				t.Errorf("info with an untrusted state: installed %+v, warnings %q", info.InstalledPlan, info.Warnings)
			}

			// apply converges as on a new host, and keeps the bad state aside.
			tp := newTestPlan(t, "v1")
			h.stage(tp.contents)
			res := h.applyOnly(tp.plan)
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "is not trusted") || !strings.Contains(res.Warnings[0], "state.json.rejected") {
				t.Errorf("apply's warnings: %q", res.Warnings)
			}
			for _, s := range []string{"svc-a", "svc-b", "svc-c"} {
				if byName(res)[s].State != "Running" {
					t.Errorf("%s after apply: %+v", s, byName(res)[s])
				}
			}
			if !h.exists(statePath + ".rejected") {
				t.Errorf("the untrusted state was not kept aside")
			}
			if info := h.info(); info.InstalledPlan == nil || info.InstalledPlan.Version != "v1" || len(info.Warnings) != 0 {
				t.Errorf("info after apply: %+v, warnings %q", info.InstalledPlan, info.Warnings)
			}
			checkUntouched(t, h, foreign)
		})
	}
}
