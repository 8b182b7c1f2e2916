package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// A host key fingerprint given beforehand (spec.hostKeyFingerprint) is
// checked from the first connection on: a host presenting another key is a
// HostKeyMismatch naming both fingerprints, nothing is pinned or installed,
// and the only way to accept the key is to name its fingerprint.
func TestHostKeyPinnedBeforeFirstContact(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	// The fingerprint an administrator was given: another host's key.
	other, err := h.RotateHostKey()
	if err != nil {
		t.Fatal(err)
	}
	expected := ssh.FingerprintSHA256(other)
	if _, err := h.RotateHostKey(); err != nil { // the host now presents a third key
		t.Fatal(err)
	}
	real := h.Fingerprint()

	w.startOperator(t, operatorOptions{})
	inst := w.instanceFor(t, "pinned", h)
	patch := client.MergeFrom(inst.DeepCopy())
	inst.Spec.HostKeyFingerprint = expected
	if err := w.client.Patch(context.Background(), inst, patch); err != nil {
		t.Fatal(err)
	}
	got := w.waitCondition(t, "pinned", winnodev1.ConditionHostKeyMismatch, "True", winnodev1.ReasonHostKeyChanged, time.Minute)
	msg := got.Status.LastError
	if !strings.Contains(msg, expected) || !strings.Contains(msg, real) || !strings.Contains(msg, "spec.hostKeyFingerprint") {
		t.Errorf("lastError %q: want both fingerprints (%s expected, %s presented) and how to name the new one", msg, expected, real)
	}
	if got.Status.HostKey != "" || got.Status.HostKeyFingerprint != "" || got.Status.NodeName != "" {
		t.Errorf("the presented key was trusted or the host was talked to: hostKey %q, nodeName %q", got.Status.HostKeyFingerprint, got.Status.NodeName)
	}

	// Naming the presented key's fingerprint accepts it.
	cur := w.get(t, "pinned")
	patch = client.MergeFrom(cur.DeepCopy())
	cur.Spec.HostKeyFingerprint = real
	if err := w.client.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
	ready := w.waitReady(t, "pinned", 3*time.Minute)
	if ready.Status.HostKeyFingerprint != real {
		t.Errorf("pinned %s, want %s", ready.Status.HostKeyFingerprint, real)
	}
}
