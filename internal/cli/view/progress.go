package view

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
)

// HostState is what a progress display knows about one host: its
// WindowsInstance's status and, while it syncs, the upload's progress.
type HostState struct {
	Name      string // the WindowsInstance's name
	Address   string
	Hostname  string
	Phase     string
	Step      string
	Node      string
	NodeReady bool
	LastError string
	// Upload is the last report of an upload of the current step, or nil.
	Upload *host.Progress
}

// label names the host for people: its hostname when known, and address.
func (h HostState) label() string {
	if h.Hostname != "" && !strings.EqualFold(h.Hostname, h.Address) {
		return h.Hostname + " (" + h.Address + ")"
	}
	return h.Address
}

// summary is the host's state in words, without the upload. A failure's
// lastError names the step that failed ("step connect: ...", the
// engine's configure.StepError), so a Failed host shows it instead of
// its step: "Failed: step connect: connection refused".
func (h HostState) summary() string {
	phase := h.Phase
	if phase == "" {
		phase = "waiting for the operator"
	}
	var b strings.Builder
	b.WriteString(phase)
	switch {
	case h.Phase == "Failed" && h.LastError != "":
		fmt.Fprintf(&b, ": %s", strings.Join(strings.Fields(h.LastError), " "))
	case h.Phase == "Ready" && h.NodeReady:
		fmt.Fprintf(&b, ": node %s is Ready", h.Node)
	case h.Phase == "Ready":
		fmt.Fprintf(&b, ": node %s is not Ready", h.Node)
	case h.Step != "":
		fmt.Fprintf(&b, ", step %s", h.Step)
	}
	return b.String()
}

// uploading is the upload shown for h, or nil.
func (h HostState) uploading() *host.Progress {
	if h.Upload == nil || h.Upload.BytesTotal <= 0 {
		return nil
	}
	return h.Upload
}

func sortHosts(hosts []HostState) []HostState {
	hosts = append([]HostState(nil), hosts...)
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Name < hosts[j].Name })
	return hosts
}

// Display shows the hosts' progress as it changes.
type Display interface {
	// show displays the hosts as they are at now.
	Show(now time.Time, hosts []HostState)
	// finish leaves the last state on screen; what is written after it
	// starts on a fresh line.
	Finish()
}

// NewDisplay is a live display when w is a terminal, plain lines
// otherwise.
func NewDisplay(w io.Writer, start time.Time) Display {
	if !IsTerminal(w) {
		return NewLines(w, start)
	}
	fd := int(w.(*os.File).Fd())
	return &Live{w: w, start: start, width: func() int {
		if cols, _, err := term.GetSize(fd); err == nil && cols > 0 {
			return cols
		}
		return 100
	}}
}

// Lines prints one plain line whenever a host's state changes, and
// upload progress in quarters: for logs, pipes and CI, where redrawing
// makes no sense.
type Lines struct {
	w     io.Writer
	start time.Time
	last  map[string]string // host name → last line printed
	label map[string]string // host name → its label then
	quart map[string]int64  // host name → upload quarter last printed
}

func NewLines(w io.Writer, start time.Time) *Lines {
	return &Lines{w: w, start: start, last: map[string]string{}, label: map[string]string{}, quart: map[string]int64{}}
}

func (d *Lines) Show(now time.Time, hosts []HostState) {
	present := map[string]bool{}
	for _, h := range hosts {
		present[h.Name] = true
	}
	var gone []string
	for name := range d.last {
		if !present[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		fmt.Fprintf(d.w, "%s %s: WindowsInstance deleted\n", Elapsed(now.Sub(d.start)), d.label[name])
		delete(d.last, name)
		delete(d.label, name)
		delete(d.quart, name)
	}
	for _, h := range sortHosts(hosts) {
		if s := h.summary(); d.last[h.Name] != s {
			d.last[h.Name], d.label[h.Name] = s, h.label()
			delete(d.quart, h.Name)
			fmt.Fprintf(d.w, "%s %s: %s\n", Elapsed(now.Sub(d.start)), h.label(), s)
		}
		if p := h.uploading(); p != nil {
			q := 4 * p.BytesDone / p.BytesTotal
			if last, ok := d.quart[h.Name]; !ok || q > last {
				d.quart[h.Name] = q
				fmt.Fprintf(d.w, "%s %s: uploaded %d%% (%s of %s)\n", Elapsed(now.Sub(d.start)), h.label(),
					100*p.BytesDone/p.BytesTotal, HumanBytes(p.BytesDone), HumanBytes(p.BytesTotal))
			}
		}
	}
}

// Finish does nothing: every line is complete.
func (d *Lines) Finish() {}

// Remember takes hosts as already shown, without printing them: what
// follows prints only their changes.
func (d *Lines) Remember(now time.Time, hosts []HostState) {
	w := d.w
	d.w = io.Discard
	d.Show(now, hosts)
	d.w = w
}

// Live redraws one line per host in place on a terminal, with a
// progress Bar during uploads.
type Live struct {
	w     io.Writer
	start time.Time
	width func() int // the terminal's width now
	drawn int        // lines drawn by the last frame
}

func (d *Live) Show(now time.Time, hosts []HostState) {
	lines := liveFrame(now.Sub(d.start), sortHosts(hosts), d.width())
	var b strings.Builder
	if d.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", d.drawn) // back to the frame's first line
	}
	for _, l := range lines {
		b.WriteString("\r\x1b[2K") // clear the line
		b.WriteString(l)
		b.WriteByte('\n')
	}
	for i := len(lines); i < d.drawn; i++ { // a host went away
		b.WriteString("\r\x1b[2K\n")
	}
	if d.drawn > len(lines) {
		fmt.Fprintf(&b, "\x1b[%dA", d.drawn-len(lines))
	}
	d.drawn = len(lines)
	_, _ = io.WriteString(d.w, b.String())
}

func (d *Live) Finish() { d.drawn = 0 }

// spinner turns while a host is being worked on.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// liveFrame renders one frame, each line cut to width (a wrapped line
// would break the redraw).
func liveFrame(since time.Duration, hosts []HostState, width int) []string {
	labelWidth := 0
	for _, h := range hosts {
		labelWidth = max(labelWidth, len([]rune(h.label())))
	}
	ready := 0
	var lines []string
	for _, h := range hosts {
		mark := spinner[int(since/(100*time.Millisecond))%len(spinner)]
		switch {
		case h.Phase == "Ready" && h.NodeReady:
			mark = "✓"
			ready++
		case h.Phase == "Failed":
			mark = "✗"
		case h.Phase == "":
			mark = "·"
		}
		line := fmt.Sprintf(" %s %-*s  %s", mark, labelWidth, h.label(), h.summary())
		if p := h.uploading(); p != nil {
			line = fmt.Sprintf(" %s %-*s  %s, step %s  %s %3d%%  %s of %s", mark, labelWidth, h.label(), h.Phase, h.Step,
				Bar(p.BytesDone, p.BytesTotal, 20), 100*p.BytesDone/p.BytesTotal, HumanBytes(p.BytesDone), HumanBytes(p.BytesTotal))
		}
		lines = append(lines, cut(line, width))
	}
	lines = append(lines, cut(fmt.Sprintf(" %d of %d Ready (%.1fs)", ready, len(hosts), since.Seconds()), width))
	return lines
}

// Bar is a progress Bar of width cells.
func Bar(done, total int64, width int) string {
	n := 0
	if total > 0 {
		n = int(min(done, total) * int64(width) / total)
	}
	return "[" + strings.Repeat("█", n) + strings.Repeat("░", width-n) + "]"
}

func cut(s string, width int) string {
	if r := []rune(s); width > 1 && len(r) > width-1 {
		return string(r[:width-2]) + "…"
	}
	return s
}

// Elapsed is a duration since the start, as the displays print it.
func Elapsed(d time.Duration) string {
	return fmt.Sprintf("[%5.1fs]", d.Seconds())
}

// HumanBytes is n in B, KiB, MiB or GiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 2 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMG"[i])
}

// ReadHostStates reads every WindowsInstance and Node into host states;
// upload, when not nil, gives an instance's current upload.
func ReadHostStates(ctx context.Context, c client.Client, upload func(*winnodev1.WindowsInstance) *host.Progress) ([]HostState, error) {
	var insts winnodev1.WindowsInstanceList
	if err := c.List(ctx, &insts); err != nil {
		return nil, fmt.Errorf("listing WindowsInstances: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	ready := map[string]bool{}
	for i := range nodes.Items {
		ready[nodes.Items[i].Name] = NodeReady(&nodes.Items[i]) == "Ready"
	}
	var hosts []HostState
	for i := range insts.Items {
		inst := &insts.Items[i]
		h := HostState{
			Name: inst.Name, Address: inst.Spec.Address, Hostname: inst.Status.Hostname,
			Phase: string(inst.Status.Phase), Step: inst.Status.Step, Node: inst.Status.NodeName,
			NodeReady: ready[inst.Status.NodeName], LastError: inst.Status.LastError,
		}
		if upload != nil {
			h.Upload = upload(inst)
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}
