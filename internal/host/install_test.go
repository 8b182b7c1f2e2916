package host

import (
	"context"
	"os"
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

func TestInstallThenRun(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	ctx := context.Background()

	// This test binary is the fake agent: upload it where RunAgent finds it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	agent := LocalFile{LocalPath: self, HostPath: `C:\Program Files\winnode\` + fakeAgentName, SHA256: sum(data), Size: int64(len(data))}
	if n, err := c.Install(ctx, agent, nil); err != nil || n != agent.Size {
		t.Fatalf("Install = %d, %v; want %d bytes", n, err, agent.Size)
	}
	// A path with a space cannot be run (see commandLine); install it
	// where it can, over an older file.
	agent.HostPath = `C:\k\` + fakeAgentName
	os.MkdirAll(must(h.Path(`C:\k`)), 0o755)
	os.WriteFile(must(h.Path(agent.HostPath)), []byte("old agent"), 0o755)
	if _, err := c.Install(ctx, agent, nil); err != nil {
		t.Fatalf("Install over an older file: %v", err)
	}
	var info plan.Info
	if err := c.RunAgent(ctx, agent.HostPath, []string{"info"}, nil, &info); err != nil || info.Hostname != "WIN-FAKE" {
		t.Fatalf("RunAgent of the installed agent: %+v, %v", info, err)
	}
	if _, err := os.Stat(must(h.Path(agent.HostPath + ".part"))); !os.IsNotExist(err) {
		t.Errorf("the .part file is left behind: %v", err)
	}

	bad := agent
	bad.SHA256 = sum([]byte("other"))
	if _, err := c.Install(ctx, bad, nil); err == nil {
		t.Error("Install of content that does not match its hash succeeded")
	}
	if err := c.RunAgent(ctx, agent.HostPath, []string{"info"}, nil, nil); err != nil {
		t.Errorf("a refused install damaged the installed agent: %v", err)
	}
}
