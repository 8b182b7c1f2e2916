package logfilter

import (
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 26, 20, 30, 0, 0, time.UTC)

func TestLineTime(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Time
		ok   bool
	}{
		{"I1126 20:25:40.123456    4242 server.go:1] kubelet", time.Date(2026, 11, 26, 20, 25, 40, 123456000, time.UTC), true},
		{"E1231 23:59:59.000000 1 x.go:2] last year's", time.Date(2025, 12, 31, 23, 59, 59, 0, time.UTC), true},
		{"2026-11-26T20:25:41Z winnode-service: started C:\\k\\kubelet.exe", time.Date(2026, 11, 26, 20, 25, 41, 0, time.UTC), true},
		{`time=2026-11-26T20:25:42.5+01:00 level=INFO msg="applying plan"`, time.Date(2026, 11, 26, 19, 25, 42, 5e8, time.UTC), true},
		{`time="2026-11-26T20:25:43.000000001Z" level=info msg="containerd successfully booted"`, time.Date(2026, 11, 26, 20, 25, 43, 1, time.UTC), true},
		{"ts=2026-11-26T20:25:44.000Z caller=main.go level=info", time.Date(2026, 11, 26, 20, 25, 44, 0, time.UTC), true},
		{"goroutine 1 [running]:", time.Time{}, false},
		{"I1332 20:25:40.123456 no such month", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, ok := LineTime(tc.line, now)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("LineTime(%q) = %v, %t; want %v, %t", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFilter(t *testing.T) {
	log := "I1126 18:00:00.000000 1 a.go:1] two and a half hours ago\n" +
		"I1126 20:00:00.000000 1 a.go:1] half an hour ago\n" +
		"panic: something\n" + // no time: goes with the line before
		"goroutine 1 [running]:\n" +
		"I1126 20:29:00.000000 1 a.go:1] a minute ago\n" +
		"I1126 20:29:30.000000 1 a.go:1] half a minute ago\n"
	for name, tc := range map[string]struct {
		o    Options
		want []string // first and last kept lines
		n    int
	}{
		"all":            {Options{Tail: -1, Now: now}, []string{"two and a half", "half a minute"}, 6},
		"since 1h":       {Options{Since: time.Hour, Tail: -1, Now: now}, []string{"half an hour ago", "half a minute"}, 5},
		"since 5m":       {Options{Since: 5 * time.Minute, Tail: -1, Now: now}, []string{"a minute ago", "half a minute"}, 2},
		"tail 3":         {Options{Tail: 3, Now: now}, []string{"goroutine", "half a minute"}, 3},
		"since and tail": {Options{Since: time.Hour, Tail: 1, Now: now}, []string{"half a minute", "half a minute"}, 1},
		"since 1s":       {Options{Since: time.Second, Tail: -1, Now: now}, nil, 0},
		"tail 0":         {Options{Tail: 0, Now: now}, nil, 0},
	} {
		got := Filter(log, tc.o)
		lines := strings.SplitAfter(got, "\n")
		lines = lines[:len(lines)-1]
		if len(lines) != tc.n {
			t.Errorf("%s: %d lines kept, want %d:\n%s", name, len(lines), tc.n, got)
			continue
		}
		if tc.n > 0 && (!strings.Contains(lines[0], tc.want[0]) || !strings.Contains(lines[len(lines)-1], tc.want[1])) {
			t.Errorf("%s: kept\n%s\nwant from %q to %q", name, got, tc.want[0], tc.want[1])
		}
	}
	// A log without any time cannot be cut by --since.
	if got := Filter("no time\nat all\n", Options{Since: time.Minute, Tail: -1, Now: now}); got != "no time\nat all\n" {
		t.Errorf("a log without times lost lines: %q", got)
	}
	// The last line need not end.
	if got := Filter("a\nb", Options{Tail: 1, Now: now}); got != "b" {
		t.Errorf("tail 1 of an unfinished line: %q", got)
	}
}

func TestOptionsCheck(t *testing.T) {
	if err := (Options{Since: -time.Second, Tail: -2}).Check(); err == nil || !strings.Contains(err.Error(), "--since") || !strings.Contains(err.Error(), "--tail -2") {
		t.Errorf("Check of a negative since and tail -2: %v", err)
	}
	if err := (Options{Since: time.Hour, Tail: -1}).Check(); err != nil {
		t.Errorf("Check of valid options: %v", err)
	}
}

// FuzzFilter: whatever a log holds, Filter never panics and keeps only
// whole lines of it, a suffix of its lines when only --tail is given.
func FuzzFilter(f *testing.F) {
	f.Add("I1126 20:25:40.123456 1 a.go:1] x\nfoo\n", int64(time.Hour), 2)
	f.Add("time=2026-11-26T20:25:42Z msg=x\n\n\n", int64(0), 0)
	f.Add("I9999 99:99:99.999999\nE0229 00:00:00.000000\n", int64(time.Minute), -1)
	f.Fuzz(func(t *testing.T, text string, since int64, tail int) {
		if since < 0 || tail < -1 {
			return
		}
		got := Filter(text, Options{Since: time.Duration(since), Tail: tail, Now: now})
		if !strings.HasSuffix(text, got) && since == 0 {
			t.Fatalf("tail %d of %q is %q, not a suffix", tail, text, got)
		}
		if !strings.Contains(text, got) {
			t.Fatalf("Filter(%q) = %q, not a part of it", text, got)
		}
	})
}
