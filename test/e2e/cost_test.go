package e2e

import (
	"fmt"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// A no-op check of a Ready host costs one SSH connection running one
// program (the agent's info) in one session, moves no payload byte, and
// writes nothing to the API server: counted on the simulated host's SSH
// server and in the real API server's audit log.
func TestNoopCheckIsOneExecAndNoWrite(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "noop-cost", h)
	w.waitReady(t, "noop-cost", 3*time.Minute)
	op.stop()

	before := h.Counters()
	since := time.Now()
	op = w.startOperator(t, operatorOptions{})
	eventually(t, time.Minute, "the Ready host to be checked", func() (bool, string) {
		return op.checked.Load() >= 1, fmt.Sprintf("%d checks", op.checked.Load())
	})
	op.stop()
	got := h.Counters().Sub(before)
	if got.Connections != 1 || got.Sessions != 1 || got.Execs != 1 || got.SFTP != 0 {
		t.Errorf("a no-op check cost %d connections, %d sessions (%d execs, %d SFTP), want one connection running one program",
			got.Connections, got.Sessions, got.Execs, got.SFTP)
	}
	if n := op.uploaded.Load(); n != 0 {
		t.Errorf("a no-op check uploaded %d bytes", n)
	}
	writes, err := w.env.Writes(operatorUser, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, wr := range writes {
		t.Errorf("a no-op check wrote to the API server: %s", wr)
	}
	if inst := w.get(t, "noop-cost"); inst.Status.Phase != winnodev1.PhaseReady {
		t.Errorf("phase %s after the check", inst.Status.Phase)
	}
}
