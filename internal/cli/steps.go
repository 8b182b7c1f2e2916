package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/host"
)

// stepPrinter prints the steps of add and remove: one line per step with
// its duration once it is over, then what happened during it. On a
// terminal an upload shows as a live view.Bar while it runs.
type stepPrinter struct {
	mu      sync.Mutex
	w       io.Writer
	live    bool
	start   time.Time
	order   map[string]int
	current string
	began   time.Time
	notes   []string
	upload  *host.Progress // the step's last upload report
	drawn   bool           // a live upload line is on screen
}

func newStepPrinter(w io.Writer, live bool, start time.Time) *stepPrinter {
	order := map[string]int{}
	// Drain comes before plan (an upgrade that restarts services drains
	// first) and before remove (deconfiguration).
	for i, s := range []string{configure.StepConnect, configure.StepInfo, configure.StepCredentials, configure.StepDrain,
		configure.StepPlan, configure.StepSync, configure.StepApply, configure.StepJoin, configure.StepFinish,
		configure.StepRemove, configure.StepDeleteNode} {
		order[s] = i + 1
	}
	return &stepPrinter{w: w, live: live, start: start, order: order}
}

// begin notes that step started. The configurer repeats steps while it
// waits (join, finish); only moving forward ends a step.
func (p *stepPrinter) begin(step string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current != "" && p.order[step] <= p.order[p.current] {
		return
	}
	p.doneLocked(true)
	p.current, p.began = step, time.Now()
}

// doneLocked prints the current step, then its notes.
func (p *stepPrinter) doneLocked(ok bool) {
	if p.current == "" {
		return
	}
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[2K")
		p.drawn = false
	}
	mark := "✓"
	if !ok {
		mark = "✗"
	}
	fmt.Fprintf(p.w, "  %s %-12s %8s\n", mark, p.current, time.Since(p.began).Round(10*time.Millisecond))
	if u := p.upload; u != nil {
		fmt.Fprintf(p.w, "      uploaded %s in %d file(s)\n", view.HumanBytes(u.BytesDone), u.FilesTotal)
	}
	for _, n := range p.notes {
		fmt.Fprintf(p.w, "      %s\n", n)
	}
	p.current, p.notes, p.upload = "", nil, nil
}

// end ends the last step (ok false: it failed).
func (p *stepPrinter) end(ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doneLocked(ok)
}

// note records a line about the current step.
func (p *stepPrinter) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	if p.current == "" {
		fmt.Fprintf(p.w, "      %s\n", msg)
		return
	}
	p.notes = append(p.notes, msg)
}

// event is the Configurer's Event hook.
func (p *stepPrinter) event(_ *winnodev1.WindowsInstance, eventType, reason, message string) {
	if strings.HasPrefix(message, "phase ") {
		return // the steps say it
	}
	if eventType == corev1.EventTypeWarning {
		p.note("warning (%s): %s", reason, message)
		return
	}
	p.note("%s", message)
}

// progress is the Configurer's Progress hook.
func (p *stepPrinter) progress(_ *winnodev1.WindowsInstance, pr host.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.upload = &pr
	if !p.live || pr.BytesTotal <= 0 {
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[2K    %s %s %3d%%  %s of %s", p.current, view.Bar(pr.BytesDone, pr.BytesTotal, 30),
		100*pr.BytesDone/pr.BytesTotal, view.HumanBytes(pr.BytesDone), view.HumanBytes(pr.BytesTotal))
	p.drawn = true
}
