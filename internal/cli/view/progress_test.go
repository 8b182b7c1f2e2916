package view

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/testkit"
)

// progressScript is three hosts going from listed to Ready, one failing on
// the way, one uploading in steps.
func progressScript() [][]HostState {
	a := HostState{Name: "127.0.0.10", Address: "127.0.0.10"}
	b := HostState{Name: "127.0.0.11", Address: "127.0.0.11"}
	c := HostState{Name: "127.0.0.12", Address: "127.0.0.12"}
	var frames [][]HostState
	add := func(hosts ...HostState) { frames = append(frames, hosts) }
	add(a, b)
	a.Phase, a.Step = "Pending", ""
	b.Phase, b.Step = "Configuring", "connect"
	add(a, b, c)
	a.Phase, a.Step, a.Hostname = "Configuring", "info", "WIN-AAAA"
	a.Upload = &host.Progress{BytesDone: 21 << 20, BytesTotal: 21 << 20} // the agent, at first contact
	b.Phase, b.Step, b.LastError = "Failed", "connect", "step connect: connecting to 127.0.0.11:22:\nconnection refused"
	c.Phase, c.Step, c.Hostname = "Configuring", "sync", "WIN-CCCC"
	c.Upload = &host.Progress{BytesDone: 0, BytesTotal: 64 << 20}
	add(a, b, c)
	c.Upload = &host.Progress{BytesDone: 20 << 20, BytesTotal: 64 << 20}
	add(a, b, c)
	c.Upload = &host.Progress{BytesDone: 40 << 20, BytesTotal: 64 << 20}
	add(a, b, c)
	c.Upload = &host.Progress{BytesDone: 64 << 20, BytesTotal: 64 << 20}
	a.Phase, a.Step, a.Node, a.NodeReady, a.Upload = "Ready", "", "win-aaaa", true, nil
	b.Phase, b.Step, b.LastError = "Configuring", "sync", ""
	add(a, b, c)
	c.Phase, c.Step, c.Node, c.Upload = "Configuring", "join", "win-cccc", nil // the demo drops an upload of another step
	add(a, b, c)
	c.Phase, c.Step, c.NodeReady = "Ready", "", true
	add(a, b, c)
	// Taken out of the ConfigMap: deconfigured, then deleted.
	a.Phase, a.Step = "Deconfiguring", "drain"
	add(a, b, c)
	add(b, c)
	return frames
}

var cursorUp = regexp.MustCompile(`\x1b\[\d+A`)

var progressStart = time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)

func TestLinesDisplayGolden(t *testing.T) {
	var b bytes.Buffer
	d := NewLines(&b, progressStart)
	for i, hosts := range progressScript() {
		d.Show(progressStart.Add(time.Duration(i)*1500*time.Millisecond), hosts)
		// Showing the same state again prints nothing.
		d.Show(progressStart.Add(time.Duration(i)*1500*time.Millisecond), hosts)
	}
	testkit.Golden(t, "progress-lines.golden", b.String())
}

func TestLiveFrameGolden(t *testing.T) {
	var b strings.Builder
	for i, hosts := range progressScript() {
		for _, l := range liveFrame(time.Duration(i)*1500*time.Millisecond, sortHosts(hosts), 100) {
			b.WriteString(l + "\n")
		}
		b.WriteString("--\n")
	}
	testkit.Golden(t, "progress-live.golden", b.String())
}

func TestLiveDisplayRedrawsInPlace(t *testing.T) {
	var b bytes.Buffer
	d := &Live{w: &b, start: progressStart, width: func() int { return 80 }}
	frames := progressScript()
	d.Show(progressStart, frames[1]) // 3 hosts + summary line
	if cursorUp.MatchString(b.String()) {
		t.Fatalf("the first frame moved the cursor up: %q", b.String())
	}
	b.Reset()
	d.Show(progressStart.Add(time.Second), frames[2])
	if !strings.HasPrefix(b.String(), "\x1b[4A") {
		t.Errorf("the second frame does not start by moving up over the first 4 lines: %q", b.String())
	}
	b.Reset()
	d.Show(progressStart.Add(2*time.Second), frames[0]) // a host went away: 2 hosts + summary
	if got := b.String(); !strings.HasPrefix(got, "\x1b[4A") || !strings.HasSuffix(got, "\r\x1b[2K\n\x1b[1A") {
		t.Errorf("a shorter frame does not clear the leftover line and come back: %q", got)
	}
	for _, l := range liveFrame(0, sortHosts(frames[3]), 40) {
		if n := len([]rune(l)); n > 39 {
			t.Errorf("a line of %d runes on a 40-column terminal would wrap: %q", n, l)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 64 << 20: "64.0 MiB", 3 << 30: "3.0 GiB", 5 << 40: "5120.0 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSummaryNamesTheStepOnce: a host's line names its step once, also
// when it failed and its lastError (configure.StepError's message) names
// the step that failed.
func TestSummaryNamesTheStepOnce(t *testing.T) {
	cases := []struct {
		h    HostState
		want string
	}{
		{HostState{Phase: "Configuring", Step: "sync"}, "Configuring, step sync"},
		{HostState{Phase: "Failed", Step: "info", LastError: "step info: node name conflict: host 127.0.0.11 reports the hostname win-a"},
			"Failed: step info: node name conflict: host 127.0.0.11 reports the hostname win-a"},
		{HostState{Phase: "Failed", Step: "connect", LastError: "step connect: connecting to 127.0.0.11:22:\nconnection refused"},
			"Failed: step connect: connecting to 127.0.0.11:22: connection refused"},
		// A Ready host whose check failed: no step recorded, the error names it.
		{HostState{Phase: "Failed", LastError: "step connect: connection refused"}, "Failed: step connect: connection refused"},
		{HostState{Phase: "Failed", Step: "connect"}, "Failed, step connect"},
		{HostState{Phase: "Ready", Node: "win-a", NodeReady: true, LastError: "old"}, "Ready: node win-a is Ready"},
		{HostState{}, "waiting for the operator"},
	}
	for _, c := range cases {
		if got := c.h.summary(); got != c.want {
			t.Errorf("summary of %+v = %q, want %q", c.h, got, c.want)
		}
	}
}
