package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/plan"
)

func TestRunAgent(t *testing.T) {
	h := newSimHost(t)
	h.installFakeAgent(t)
	c := connect(t, h.options())
	ctx := context.Background()

	t.Run("info", func(t *testing.T) {
		var info plan.Info
		if err := c.RunAgent(ctx, fakeAgentPath, []string{"info"}, nil, &info); err != nil {
			t.Fatalf("RunAgent info: %v", err)
		}
		if info.Hostname != "WIN-FAKE" {
			t.Errorf("info = %+v", info)
		}
	})
	t.Run("program path in another case", func(t *testing.T) {
		var info plan.Info
		if err := c.RunAgent(ctx, `c:\K\FAKEAGENT.EXE`, []string{"info"}, nil, &info); err != nil {
			t.Fatalf("RunAgent: %v", err)
		}
	})
	t.Run("agent error", func(t *testing.T) {
		err := c.RunAgent(ctx, fakeAgentPath, []string{"fail"}, nil, new(plan.Result))
		var ae *AgentError
		if !errors.As(err, &ae) {
			t.Fatalf("RunAgent fail: %v, want *AgentError", err)
		}
		if ae.ExitCode != 3 || ae.Err.Code != plan.ErrService || ae.Err.Service != "kubelet" {
			t.Errorf("AgentError = %+v", ae)
		}
		if !strings.Contains(ae.StderrTail, "fakeagent: running fail") {
			t.Errorf("StderrTail = %q, want the agent's log", ae.StderrTail)
		}
		if !strings.Contains(err.Error(), h.IP()) {
			t.Errorf("error %q does not name the host", err)
		}
		t.Logf("agent error: %v", err)
	})
	t.Run("garbage", func(t *testing.T) {
		err := c.RunAgent(ctx, fakeAgentPath, []string{"garbage"}, nil, new(plan.Info))
		var ne *NonsenseError
		if !errors.As(err, &ne) || !strings.Contains(ne.StdoutPrefix, "Windows PowerShell") {
			t.Fatalf("RunAgent garbage: %v, want *NonsenseError quoting the output", err)
		}
		t.Logf("garbage: %v", err)
	})
	t.Run("missing program", func(t *testing.T) {
		err := c.RunAgent(ctx, `C:\k\winnode-agent.exe`, []string{"info"}, nil, new(plan.Info))
		var pe *ProgramNotFoundError
		if !errors.As(err, &pe) || pe.Program != `C:\k\winnode-agent.exe` {
			t.Fatalf("RunAgent of a missing program: %v, want *ProgramNotFoundError", err)
		}
		t.Logf("missing program: %v", err)
	})
	t.Run("stdin and arguments", func(t *testing.T) {
		var got struct {
			Stdin string   `json:"stdin"`
			Args  []string `json:"args"`
		}
		args := []string{"echo", `--plan=C:\k\x.json`, `C:\a\`, "a=b+c"}
		if err := c.RunAgent(ctx, fakeAgentPath, args, strings.NewReader(`{"secret":"token"}`), &got); err != nil {
			t.Fatalf("RunAgent echo: %v", err)
		}
		if got.Stdin != `{"secret":"token"}` || strings.Join(got.Args, "|") != strings.Join(args[1:], "|") {
			t.Errorf("the agent got stdin %q and args %q; want %q and %q", got.Stdin, got.Args, `{"secret":"token"}`, args[1:])
		}
	})
	t.Run("unsafe argument refused", func(t *testing.T) {
		if err := c.RunAgent(ctx, fakeAgentPath, []string{"echo", "a&b"}, nil, nil); err == nil || !strings.Contains(err.Error(), "shell") {
			t.Fatalf("RunAgent with a shell operator: %v, want a refusal", err)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		done := make(chan error, 1)
		go func() { done <- c.RunAgent(ctx, fakeAgentPath, []string{"sleep"}, nil, nil) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("RunAgent sleep, cancelled: %v, want context.Canceled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("RunAgent did not return within 30s of its context being cancelled")
		}
		// The connection still works.
		if err := c.RunAgent(context.Background(), fakeAgentPath, []string{"info"}, nil, nil); err != nil {
			t.Errorf("RunAgent after a cancelled run: %v", err)
		}
	})
	t.Run("output too large", func(t *testing.T) {
		opts := h.options()
		opts.MaxOutput = 1000
		small := connect(t, opts)
		_, _, code, err := small.Run(ctx, []string{fakeAgentPath, "big", "5000"}, nil)
		var oe *OutputTooLargeError
		if !errors.As(err, &oe) || code != -1 || !strings.Contains(err.Error(), "more than 1000 bytes") || !strings.Contains(err.Error(), small.Address()) {
			t.Fatalf("Run big: code %d, %v; want -1 (cut off) and an *OutputTooLargeError naming the host and the limit", code, err)
		}
		// A host that never stops answering is cut off, not read to the end.
		_, _, _, err = small.Run(ctx, []string{fakeAgentPath, "big", "100000000000"}, nil)
		if !errors.As(err, &oe) {
			t.Fatalf("Run of an endless answer: %v, want *OutputTooLargeError", err)
		}
		if out, _, _, err := small.Run(ctx, []string{fakeAgentPath, "big", "1000"}, nil); err != nil || len(out) != 1000 {
			t.Errorf("Run of exactly the limit: %d bytes, %v", len(out), err)
		}
	})
	t.Run("connection dropped", func(t *testing.T) {
		c := connect(t, h.options())
		time.AfterFunc(200*time.Millisecond, h.DropConnections)
		err := c.RunAgent(ctx, fakeAgentPath, []string{"sleep"}, nil, nil)
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			t.Fatalf("RunAgent over a dropped connection: %v, want *UnreachableError", err)
		}
	})
}
