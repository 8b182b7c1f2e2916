// Package logfilter keeps the part of a log that `winnodectl logs --since
// D --tail N` asks for. The kubelet's /logs/ serves a file whole, so the
// command filters what it receives; the agent's `logs` command, which
// reads a log over SSH when the node is down, filters with the same code
// on the host, so that only what was asked for travels.
//
// A line's time is read from the formats of the programs winnode runs:
// klog's header (kubelet, kube-proxy, flanneld, csi-proxy:
// "I1126 20:25:40.123456 ..."), an RFC 3339 time at the start of a line
// (winnode-service's own lines), and logfmt's time= or ts= (the agent's
// log/slog lines, containerd's logrus lines, windows_exporter's). A line
// without one (a stack trace, a wrapped message) belongs to the line
// before it.
package logfilter

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Options say what to keep.
type Options struct {
	// Since keeps lines from Now-Since on (0: all).
	Since time.Duration
	// Tail keeps the last Tail lines of those (negative: all).
	Tail int
	// Now is the time Since counts back from.
	Now time.Time
}

// Check refuses options no command should take: a negative --since, or a
// --tail below -1 (kubectl's "all").
func (o Options) Check() error {
	var errs []error
	if o.Since < 0 {
		errs = append(errs, fmt.Errorf("--since %s is negative: give how far back to start, such as 1h", o.Since))
	}
	if o.Tail < -1 {
		errs = append(errs, fmt.Errorf("--tail %d: give a number of lines, or -1 for all", o.Tail))
	}
	return errors.Join(errs...)
}

// Filter keeps the lines of text that o asks for, whole lines with their
// line ends. A line without a time of its own is kept with the line
// before it.
func Filter(text string, o Options) string {
	if o.Since == 0 && o.Tail < 0 {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if o.Since > 0 {
		lines = since(lines, o.Now.Add(-o.Since), o.Now)
	}
	if o.Tail >= 0 && len(lines) > o.Tail {
		lines = lines[len(lines)-o.Tail:]
	}
	return strings.Join(lines, "")
}

// since drops the lines before the first line stamped at or after cutoff
// (lines are in time order; one without a stamp goes with the line
// before). With no stamp at all, nothing can be dropped.
func since(lines []string, cutoff, now time.Time) []string {
	stamped := false
	for i, l := range lines {
		t, ok := LineTime(l, now)
		if !ok {
			continue
		}
		stamped = true
		if !t.Before(cutoff) {
			return lines[i:]
		}
	}
	if !stamped {
		return lines
	}
	return nil
}

var (
	klogHeader = regexp.MustCompile(`^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})`)
	rfc3339    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})`)
	logfmtTime = regexp.MustCompile(`^(?:time|ts)="?(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))`)
)

// LineTime is the time a log line starts with, if it has one. klog's
// header has no year and no zone: it is read in now's zone, in now's year
// unless that puts it more than a day after now (a December line read in
// January), then in the year before.
func LineTime(line string, now time.Time) (time.Time, bool) {
	if m := klogHeader.FindStringSubmatch(line); m != nil {
		n := make([]int, 6)
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		t := time.Date(now.Year(), time.Month(n[0]), n[1], n[2], n[3], n[4], n[5]*1000, now.Location())
		if t.Month() != time.Month(n[0]) || t.Day() != n[1] || n[2] > 23 || n[3] > 59 || n[4] > 60 {
			return time.Time{}, false // no such date: not a header
		}
		if t.After(now.Add(24 * time.Hour)) {
			t = t.AddDate(-1, 0, 0)
		}
		return t, true
	}
	stamp := rfc3339.FindString(line)
	if m := logfmtTime.FindStringSubmatch(line); m != nil {
		stamp = m[1]
	}
	if stamp == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, stamp)
	return t, err == nil
}
