// Package logrotate writes a log file that is rotated at a size and whose
// old copies are deleted at an age: what winnode-service.exe does with the
// output of the program it runs as a Windows service, and what the agent
// does with its own log (C:\var\log\winnode-agent\winnode-agent.log).
//
// It keeps kube-log-runner's conventions (k8s.io/component-base's
// logs/kube-log-runner, whose rotation package is internal and cannot be
// imported): --log-file-size is a resource.Quantity (100M is 100,000,000
// bytes, 100Mi 104,857,600; 0 turns rotation off), --log-file-age a
// duration, and a rotated file is renamed <name>-<YYYYMMDD-HHMMSS><ext>
// (local time, kubelet-20261126-202540.log). It does better where
// kube-log-runner loses or splits lines: two rotations within one second
// get distinct names (kubelet-20261126-202540-1.log) instead of the second
// overwriting the first; a file is cut at a line end, never inside a line
// (unless one line runs on past the size by more than Slack); old copies
// are deleted when the file is opened as well as at each rotation; and a
// rotation that fails (Windows refuses to rename a file another program
// holds open without FILE_SHARE_DELETE, as a reader of the kubelet's /logs/
// may) keeps writing to the same file and tries again later, losing
// nothing.
package logrotate

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Limits are the administrator's limits of every log winnode writes
// (the operator's --log-file-size and --log-file-age).
type Limits struct {
	// Size is the size in bytes at which the file is rotated; 0 never
	// rotates it.
	Size int64
	// Age is how long a rotated copy is kept, by its modification time; 0
	// keeps them all.
	Age time.Duration
}

// Defaults are the limits when the administrator sets none: 100M
// (100,000,000 bytes) and a week, as the Windows Machine Config Operator
// gives kube-log-runner.
var Defaults = Limits{Size: 100_000_000, Age: 168 * time.Hour}

// ParseSize reads a size as kube-log-runner's --log-file-size does, a
// resource.Quantity of bytes ("100M", "100Mi", "0"), and refuses what it
// would take silently: a negative size, and a fraction of a byte ("125m" is
// 0.125 bytes to a Quantity: a lower-case m is milli, M is mega).
func ParseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("log file size %q is not a quantity of bytes such as 100M or 50Mi: %v", s, err)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("log file size %q is negative: give 0 to turn rotation off", s)
	}
	if q.MilliValue()%1000 != 0 {
		return 0, fmt.Errorf("log file size %q is not a whole number of bytes (a lower-case m means thousandths: did you mean %sM?)", s, strings.TrimSuffix(strings.TrimSpace(s), "m"))
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("log file size %q is too large", s)
	}
	return n, nil
}

// FormatSize is a size as ParseSize reads it back: the Quantity's
// canonical form ("100M", "50Mi", "0").
func FormatSize(n int64) string {
	return resource.NewQuantity(n, resource.DecimalSI).String()
}

// ParseAge reads an age as --log-file-age does (a Go duration, "168h"),
// refusing a negative one as kube-log-runner does.
func ParseAge(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("log file age %q is not a duration such as 168h or 30m: %v", s, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("log file age %q must be non-negative (0 keeps every rotated file)", s)
	}
	return d, nil
}

// Check refuses limits no log could be kept with.
func (l Limits) Check() error {
	if l.Size < 0 {
		return fmt.Errorf("log file size %d is negative", l.Size)
	}
	if l.Age < 0 {
		return fmt.Errorf("log file age %s is negative", l.Age)
	}
	return nil
}

// Help texts of --log-file-size and --log-file-age (the operator's and
// winnodectl's).
const (
	SizeHelp = "rotate each Windows service's log (C:\\var\\log\\<service>\\<service>.log) when it reaches this size: a quantity of bytes, 100M = 100,000,000, 100Mi = 104,857,600; 0 never rotates"
	AgeHelp  = "delete rotated copies of the Windows services' logs older than this (e.g. 168h); 0 keeps them"
)

// ParseLimits reads --log-file-size and --log-file-age.
func ParseLimits(size, age string) (Limits, error) {
	var l Limits
	var err error
	if l.Size, err = ParseSize(size); err != nil {
		return l, fmt.Errorf("--log-file-size: %w", err)
	}
	if l.Age, err = ParseAge(age); err != nil {
		return l, fmt.Errorf("--log-file-age: %w", err)
	}
	return l, nil
}
