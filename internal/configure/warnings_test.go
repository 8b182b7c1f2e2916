package configure

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// A host that answers with 10,000 warnings, each carrying terminal control
// sequences, gets at most maxWarningEvents events for them in a pass and
// one that sums up the rest; no event carries a control character.
func TestAgentWarningsAreBoundedAndCleaned(t *testing.T) {
	type event struct{ reason, msg string }
	var got []event
	c := &Configurer{Log: logr.Discard(), Event: func(_ *winnodev1.WindowsInstance, _, reason, msg string) {
		got = append(got, event{reason, msg})
	}}
	inst := &winnodev1.WindowsInstance{Spec: winnodev1.WindowsInstanceSpec{Address: "10.0.0.5"}}
	warnings := make([]string, 10_000)
	for i := range warnings {
		warnings[i] = fmt.Sprintf("warning %d \x1b[2J\x1b]0;pwned\x07\r\nfake log line", i)
	}
	for range 2 { // two passes: the budget is per pass
		got = nil
		c.beginPass()
		c.agentWarnings(inst, warnings[:5_000])
		c.agentWarnings(inst, warnings[5_000:])
		c.endPass(inst)
		if len(got) != maxWarningEvents+1 {
			t.Fatalf("%d events for 10,000 warnings, want %d and one summary", len(got), maxWarningEvents)
		}
		if last := got[len(got)-1].msg; !strings.Contains(last, "9980 more warnings") {
			t.Errorf("summary %q does not count the 9,980 warnings left out", last)
		}
		for _, e := range got {
			if e.reason != ReasonAgentWarning || strings.ContainsAny(e.msg, "\x1b\x07\r\n") {
				t.Errorf("event %s %q: want AgentWarning without control characters", e.reason, e.msg)
			}
		}
	}
}
