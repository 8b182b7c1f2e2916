package winsim

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim/acl"
)

// pullData is the Pull bootstrap data winnode renders for machine, named
// computerName.
func pullData(t *testing.T, machine, computerName string) []byte {
	t.Helper()
	data, err := capibootstrap.PullBootstrapData(capibootstrap.PullInput{
		Namespace: "ns", Machine: machine, ComputerName: computerName,
		Join: &joinconfig.Config{SchemaVersion: joinconfig.SchemaVersion, OperatorVersion: "dev", AgentVersions: joinconfig.SupportedAgents("dev"),
			Machine: "ns/" + machine, NodeName: plan.NodeName(computerName),
			Cluster:        joinconfig.Cluster{Server: "https://127.0.0.1:6443", CAData: testkit.SelfSignedCA(t)},
			Network:        joinconfig.Network{Mode: plan.NetworkExternal},
			BootstrapToken: joinconfig.Secret("abcdef.0123456789abcdef")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// newBootingHost is a simulated host not yet booted, with the test binary
// as C:\k\winnode-agent.exe when agent is set (as an image gives it).
func newBootingHost(t *testing.T, agent bool) *Host {
	t.Helper()
	h, err := New(Options{StateDir: t.TempDir(), BootDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if agent {
		installHelper(t, h, `C:\k\winnode-agent.exe`)
	}
	return h
}

// userDataEnded waits until the program the user data runs after boot has
// ended, and returns its exit code and cloudbase-init's log.
func userDataEnded(t *testing.T, h *Host) (int, string) {
	t.Helper()
	var code int
	testkit.Eventually(t, time.Minute, "the user data's program to end", func() (bool, string) {
		runs, ended, c := h.UserDataProgram()
		code = c
		return ended, "runs " + map[bool]string{true: "yes", false: "no"}[runs]
	})
	local, _ := h.Path(CloudbaseInitLog)
	log, _ := os.ReadFile(local)
	return code, string(log)
}

// TestPullUserData: the simulated cloudbase-init carries out winnode's
// Pull data as the real one runs it: the computer renamed, the join config
// written readable by SYSTEM and Administrators only, no SSH key (the
// operator's, or anyone's, is refused), and after boot the agent run as
// SYSTEM, its output in cloudbase-init's log, the sentinel written once it
// succeeded.
func TestPullUserData(t *testing.T) {
	h := newBootingHost(t, true)
	if err := h.RunUserData(pullData(t, "md-0-x", "md-0-abcdef")); err != nil {
		t.Fatal(err)
	}
	if h.Hostname() != "md-0-abcdef" {
		t.Errorf("hostname %s; want the data's computer name", h.Hostname())
	}
	if owner, dacl, err := h.Security().Get(joinconfig.Path); err != nil || owner != acl.Administrators || dacl != joinConfigDACL {
		t.Errorf("join config: owner %s, DACL %q, %v; want Administrators and %s", owner, dacl, err, joinConfigDACL)
	}
	if _, err := h.LocalUser("bob", 1).ReadFile(joinconfig.Path); !errors.Is(err, acl.ErrAccessDenied) {
		t.Errorf("a local user reads the join config: %v", err)
	}
	if runs, ended, _ := h.UserDataProgram(); !runs || ended {
		t.Errorf("before boot: the agent runs %v, ended %v; want it waiting for the boot", runs, ended)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	code, log := userDataEnded(t, h)
	if code != 0 || !strings.Contains(log, "helper join: joined as SYSTEM") || !strings.Contains(log, "Script ended with exit code: 0") {
		t.Errorf("agent exit code %d; cloudbase-init's log:\n%s", code, log)
	}
	if local, _ := h.Path(`C:\run\cluster-api\bootstrap-success.complete`); !exists(local) {
		t.Error("no sentinel after the agent succeeded")
	}
	_, err := ssh.Dial("tcp", h.Addr(), &ssh.ClientConfig{User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(newSigner(t))},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("SSH to a Pull host: %v; want the key refused (no key is authorized)", err)
	}
}

// TestPullUserDataFailures: an agent that fails, or an image without one,
// fails the script: cloudbase-init logs why and no sentinel is written.
func TestPullUserDataFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		agent   bool
		machine string
		want    string
		code    int
	}{
		{"agent fails", true, "fail-x", "helper join: failing as asked", 3},
		{"no agent", false, "md-0-x", `C:\k\winnode-agent.exe is missing`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newBootingHost(t, tc.agent)
			if err := h.RunUserData(pullData(t, tc.machine, "md-0-abcdef")); err != nil {
				t.Fatal(err)
			}
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			code, log := userDataEnded(t, h)
			if code != tc.code || !strings.Contains(log, tc.want) || strings.Contains(log, "Script ended with exit code: 0") {
				t.Errorf("exit code %d, want %d; cloudbase-init's log lacks %q or says success:\n%s", code, tc.code, tc.want, log)
			}
			if local, _ := h.Path(`C:\run\cluster-api\bootstrap-success.complete`); exists(local) {
				t.Error("the sentinel is written although the script failed")
			}
		})
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
