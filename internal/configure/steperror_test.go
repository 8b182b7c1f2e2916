package configure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// TestFailureNamesItsStepOnce: however a failure reaches the status
// (claimed by its step, claimed again by an outer step, wrapped on its way
// up, or claimed by none), status.lastError and the Warning event name
// the step that failed, once.
func TestFailureNamesItsStepOnce(t *testing.T) {
	cause := errors.New("dial tcp 192.0.2.7:22: connection refused")
	conflict := fmt.Errorf("%w: host 192.0.2.7 reports the hostname win-a, which is already the node name of WindowsInstance original", errNodeNameConflict)
	cases := []struct {
		name   string
		status string // inst.Status.Step when it fails
		err    error
		want   string
		reason string
	}{
		{"claimed by its step", StepConnect,
			stepErr(StepConnect, winnodev1.ReasonUnreachable, cause),
			"step connect: " + cause.Error(), winnodev1.ReasonUnreachable},
		{"claimed again by the step that called it", StepInfo,
			stepErr(StepCredentials, winnodev1.ReasonCredentialsFailed, stepErr(StepInfo, winnodev1.ReasonNodeNameConflict, conflict)),
			"step info: " + conflict.Error(), winnodev1.ReasonNodeNameConflict},
		{"wrapped on its way up, then claimed again", StepConnect,
			stepErr(StepConnect, winnodev1.ReasonUnreachable, fmt.Errorf("configuring: %w", stepErr(StepConnect, winnodev1.ReasonAuthFailed, cause))),
			"configuring: step connect: " + cause.Error(), winnodev1.ReasonAuthFailed},
		{"claimed by no step: the current one's", StepJoin, cause,
			"step join: " + cause.Error(), winnodev1.ReasonInProgress},
		{"claimed by no step, no step yet", "", cause,
			cause.Error(), winnodev1.ReasonInProgress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var events []string
			cfg := &Configurer{Log: logr.Discard(), Event: func(_ *winnodev1.WindowsInstance, typ, reason, msg string) {
				events = append(events, typ+" "+reason+" "+msg)
			}}
			inst := &winnodev1.WindowsInstance{}
			inst.Status.Phase, inst.Status.Step = winnodev1.PhaseConfiguring, c.status
			err := cfg.fail(context.Background(), inst, c.err)
			if got := inst.Status.LastError; got != c.want {
				t.Errorf("lastError %q, want %q", got, c.want)
			}
			if err == nil || err.Error() != c.want {
				t.Errorf("returned %v, want %q", err, c.want)
			}
			if n := strings.Count(inst.Status.LastError, "step "); n > 1 {
				t.Errorf("lastError %q names a step %d times", inst.Status.LastError, n)
			}
			want := []string{"Warning Failed phase Configuring -> Failed", "Warning " + c.reason + " " + c.want}
			if strings.Join(events, "\n") != strings.Join(want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// A step cut short by a canceled context (the operator stopping) is not
// the host's failure, also when the pass's own context does not say so
// yet: nothing is recorded, no event, and the error goes back as it is.
func TestCanceledStepIsNotRecorded(t *testing.T) {
	canceled := stepErr(StepCredentials, winnodev1.ReasonCredentialsFailed,
		fmt.Errorf("reading the API server's serving certificate from 127.0.0.1:6443: %w",
			&net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}))
	var events []string
	cfg := &Configurer{Log: logr.Discard(), Event: func(_ *winnodev1.WindowsInstance, typ, reason, msg string) {
		events = append(events, typ+" "+reason+" "+msg)
	}}
	inst := &winnodev1.WindowsInstance{}
	inst.Status.Phase, inst.Status.Step = winnodev1.PhaseReady, StepCredentials
	if err := cfg.fail(context.Background(), inst, canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("returned %v, want the canceled error", err)
	}
	if inst.Status.Phase != winnodev1.PhaseReady || inst.Status.LastError != "" || len(events) != 0 {
		t.Errorf("recorded: phase %s, lastError %q, events %v", inst.Status.Phase, inst.Status.LastError, events)
	}
}
