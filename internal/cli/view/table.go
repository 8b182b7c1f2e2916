package view

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// newTabWriter aligns columns as kubectl's printers do (k8s.io/cli-runtime
// is not a dependency of this module, and its tab writer is exactly this).
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// age is how long ago t was, as kubectl's AGE column says it ("5m", "3d").
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// cell makes a value safe for one table cell: no tabs or newlines, "-"
// when empty, and at most max runes (0: no limit).
func cell(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); max > 0 && len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// NodeRow is one Windows node, as the demo's table and `status -o json`
// show it.
type NodeRow struct {
	Name           string    `json:"name"`
	Status         string    `json:"status"`
	Address        string    `json:"address"`
	OSImage        string    `json:"osImage"`
	KubeletVersion string    `json:"kubeletVersion"`
	Created        time.Time `json:"created"`
}

func NewNodeRow(n *corev1.Node) NodeRow {
	return NodeRow{
		Name:           n.Name,
		Status:         NodeReady(n),
		Address:        NodeAddress(n),
		OSImage:        n.Status.NodeInfo.OSImage,
		KubeletVersion: n.Status.NodeInfo.KubeletVersion,
		Created:        n.CreationTimestamp.Time,
	}
}

// WriteNodeTable prints nodes sorted by name.
func WriteNodeTable(w io.Writer, rows []NodeRow, now time.Time) error {
	rows = append([]NodeRow(nil), rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tSTATUS\tADDRESS\tOS IMAGE\tKUBELET VERSION\tAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(r.Name, 0), cell(r.Status, 0), cell(r.Address, 0),
			cell(r.OSImage, 0), cell(r.KubeletVersion, 0), age(r.Created, now))
	}
	return tw.Flush()
}

// preflightWidth bounds the PREFLIGHT cell; -o json has the results whole.
const preflightWidth = 30

// preflightSummary is the PREFLIGHT cell: "" before any check ran.
func preflightSummary(inst *winnodev1.WindowsInstance) string {
	cond := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionPreflight)
	if cond == nil {
		return ""
	}
	var fails, warns []string
	for _, r := range inst.Status.Preflight {
		switch r.Result {
		case "fail":
			fails = append(fails, r.Check)
		case "warn":
			warns = append(warns, r.Check)
		}
	}
	switch {
	case len(fails) > 0:
		return "fail: " + strings.Join(fails, ",")
	case len(warns) > 0:
		return "warn: " + strings.Join(warns, ",")
	}
	return "pass"
}

// InstanceRow is one WindowsInstance and its node, as `status` shows it.
type InstanceRow struct {
	Name       string    `json:"name"`
	Address    string    `json:"address"`
	Port       int32     `json:"port"`
	Source     string    `json:"source"`
	Phase      string    `json:"phase"`
	Step       string    `json:"step,omitempty"`
	Node       string    `json:"node,omitempty"`
	NodeStatus string    `json:"nodeStatus,omitempty"`
	Version    string    `json:"version,omitempty"`
	Created    time.Time `json:"created"`
	LastError  string    `json:"lastError,omitempty"`
	// Preflight sums up the pre-flight checks (condition Preflight): pass,
	// "warn: CHECK,..." or "fail: CHECK"; PreflightResults are
	// status.preflight whole (-o json).
	Preflight        string                      `json:"preflight,omitempty"`
	PreflightResults []winnodev1.PreflightResult `json:"preflightResults,omitempty"`
}

// NewInstanceRow describes inst; node is its Node, or nil when there is none.
func NewInstanceRow(inst *winnodev1.WindowsInstance, node *corev1.Node) InstanceRow {
	r := InstanceRow{
		Name:             inst.Name,
		Address:          inst.Spec.Address,
		Port:             inst.Spec.Port,
		Source:           string(inst.Spec.Source.Kind),
		Phase:            string(inst.Status.Phase),
		Step:             inst.Status.Step,
		Node:             inst.Status.NodeName,
		Version:          inst.Status.Version,
		Created:          inst.CreationTimestamp.Time,
		LastError:        inst.Status.LastError,
		Preflight:        preflightSummary(inst),
		PreflightResults: inst.Status.Preflight,
	}
	if r.Port == 0 {
		r.Port = 22
	}
	if r.Phase == "" {
		r.Phase = string(winnodev1.PhasePending)
	}
	if r.Source == "" {
		r.Source = string(winnodev1.SourceManual)
	}
	switch {
	case node != nil:
		r.NodeStatus = NodeReady(node)
	case r.Node != "":
		r.NodeStatus = "Missing"
	}
	return r
}

// lastErrorWidth keeps the table readable; `-o json` has the whole error.
const lastErrorWidth = 60

// WriteInstanceTable prints WindowsInstances sorted by name.
func WriteInstanceTable(w io.Writer, rows []InstanceRow, now time.Time) error {
	rows = append([]InstanceRow(nil), rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tADDRESS\tPHASE\tSTEP\tNODE\tNODE STATUS\tVERSION\tPREFLIGHT\tAGE\tLAST ERROR")
	for _, r := range rows {
		addr := r.Address
		if r.Port != 22 {
			addr = net.JoinHostPort(r.Address, strconv.Itoa(int(r.Port)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(r.Name, 0), cell(addr, 0), cell(r.Phase, 0),
			cell(r.Step, 0), cell(r.Node, 0), cell(r.NodeStatus, 0), cell(r.Version, 0), cell(r.Preflight, preflightWidth), age(r.Created, now),
			cell(r.LastError, lastErrorWidth))
	}
	return tw.Flush()
}
