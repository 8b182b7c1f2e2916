package logrotate

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "100M", want: 100_000_000},
		{in: "100Mi", want: 104_857_600},
		{in: "1Gi", want: 1 << 30},
		{in: "0", want: 0},
		{in: " 20Ki ", want: 20480},
		{in: "125m", err: "did you mean 125M?"},
		{in: "-1M", err: "negative"},
		{in: "lots", err: "not a quantity of bytes"},
		{in: "", err: "not a quantity of bytes"},
	} {
		got, err := ParseSize(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseSize(%q) = %d, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if got := FormatSize(100_000_000); got != "100M" {
		t.Errorf("FormatSize(1e8) = %q, want 100M", got)
	}
}

func TestParseAge(t *testing.T) {
	if d, err := ParseAge("168h"); err != nil || d != 168*time.Hour {
		t.Errorf("ParseAge(168h) = %v, %v", d, err)
	}
	for _, bad := range []string{"-1h", "a week", "7d"} {
		if _, err := ParseAge(bad); err == nil {
			t.Errorf("ParseAge(%q) accepted", bad)
		}
	}
}

// FuzzParseSize: whatever an administrator types, ParseSize never panics,
// and what it accepts is a non-negative size that reads back the same.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"100M", "100Mi", "0", "125m", "1e3", "-5", "9223372036854775807", "1E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	})
}
