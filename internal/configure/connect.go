package configure

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
)

// ClearHostKeyHint tells an administrator how to accept a changed host key.
const ClearHostKeyHint = "if the host was reinstalled on purpose, clear the pinned key: " +
	"kubectl patch windowsinstance %s --subresource=status --type=merge -p '{\"status\":{\"hostKey\":null}}' " +
	"(the next connection pins the key the host presents then)"

// errHostKeyMismatch stops all work on an instance until an administrator
// clears its pinned host key.
var errHostKeyMismatch = errors.New("host key mismatch")

// hostKeyBlocked reports whether the instance waits for an administrator to
// accept a changed host key: nothing is done until status.hostKey is cleared.
// An administrator who names a new fingerprint in spec.hostKeyFingerprint
// unblocks it too.
func hostKeyBlocked(inst *winnodev1.WindowsInstance) bool {
	if fp := inst.Spec.HostKeyFingerprint; fp != "" && fp != inst.Status.HostKeyFingerprint {
		return false
	}
	return inst.Status.HostKey != "" && meta.IsStatusConditionTrue(inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch)
}

// ExpectedHostKeyHint tells an administrator how to accept a changed host
// key when the fingerprint was given beforehand: clearing status.hostKey is
// not enough, the new fingerprint must be named.
const ExpectedHostKeyHint = "if the host was reinstalled on purpose, name the new fingerprint: " +
	"hostKey=<fingerprint> in its windows-instances entry, or spec.hostKeyFingerprint of WindowsInstance %s"

// expectFingerprint applies spec.hostKeyFingerprint: a pinned key of
// another fingerprint is dropped (the administrator named a new one), and
// the connection must present that fingerprint.
func expectFingerprint(inst *winnodev1.WindowsInstance) {
	fp := inst.Spec.HostKeyFingerprint
	if fp != "" && inst.Status.HostKey != "" && inst.Status.HostKeyFingerprint != fp {
		inst.Status.HostKey, inst.Status.HostKeyFingerprint = "", ""
	}
}

// connect opens an SSH connection with the operator's key, trusting the host
// key on first use and pinning it in the status; a different key later is a
// HostKeyMismatch that stops the work.
func (c *Configurer) connect(ctx context.Context, inst *winnodev1.WindowsInstance) (*host.Client, error) {
	if c.Signer == nil {
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonNoPrivateKey,
			"no usable SSH private key: create Secret cloud-private-key with key private-key.pem")
		return nil, stepErr(StepConnect, winnodev1.ReasonNoPrivateKey, errors.New("no usable SSH private key (Secret cloud-private-key, key private-key.pem)"))
	}
	if err := c.Addresses.CheckAddress(inst.Spec.Address); err != nil {
		return nil, c.addressNotAllowed(inst, err)
	}
	expectFingerprint(inst)
	// No key is ever taken from a Node: a kubelet may write its own Node's
	// annotations (NodeRestriction does not stop it), so what a Node says
	// cannot decide which host is trusted. Without a pinned key, the first
	// connection trusts the key (or checks spec.hostKeyFingerprint).
	cl, err := host.Connect(ctx, host.Options{
		Address:       inst.Spec.Address,
		Port:          int(inst.SSHPort()),
		User:          inst.Spec.Username,
		Signer:        c.Signer,
		PinnedHostKey: inst.Status.HostKey,
		// Checked only while no key is pinned yet.
		ExpectedFingerprint: inst.Spec.HostKeyFingerprint,
		DialTimeout:         c.dialTimeout(),
		CheckDial:           c.Addresses.CheckDial,
	})
	var (
		mismatch *host.HostKeyMismatchError
		auth     *host.AuthError
		refused  *host.AddressNotAllowedError
	)
	switch {
	case err == nil:
	case errors.As(err, &refused):
		return nil, c.addressNotAllowed(inst, err)
	case errors.As(err, &mismatch):
		c.countSSHFailure(winnodev1.ReasonHostKeyChanged)
		hint := ClearHostKeyHint
		if inst.Spec.HostKeyFingerprint != "" {
			hint = ExpectedHostKeyHint
		}
		msg := fmt.Sprintf("%v; "+hint, err, inst.Name)
		SetCondition(inst, winnodev1.ConditionHostKeyMismatch, metav1.ConditionTrue, winnodev1.ReasonHostKeyChanged, msg)
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonHostKeyChanged, "the host presented a host key other than the pinned one")
		return nil, stepErr(StepConnect, winnodev1.ReasonHostKeyChanged, fmt.Errorf("%w: %s", errHostKeyMismatch, msg))
	case errors.As(err, &auth):
		c.countSSHFailure(winnodev1.ReasonAuthFailed)
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonAuthFailed, err.Error())
		return nil, stepErr(StepConnect, winnodev1.ReasonAuthFailed, err)
	default:
		c.countSSHFailure(winnodev1.ReasonUnreachable)
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonUnreachable, err.Error())
		return nil, stepErr(StepConnect, winnodev1.ReasonUnreachable, err)
	}

	if inst.Status.HostKey == "" {
		inst.Status.HostKey = cl.HostKey()
		inst.Status.HostKeyFingerprint = cl.HostKeyFingerprint()
		// A host not known before (or reinstalled): what its C:\k holds is
		// unknown until the agent's first run secures it (agent_install.go).
		inst.Status.AgentSecured = false
		how := "on first use"
		if inst.Spec.HostKeyFingerprint != "" {
			how = "as spec.hostKeyFingerprint names it"
		}
		c.event(inst, corev1.EventTypeNormal, winnodev1.ReasonHostKeyPinned, "trusted the host key %s of %s %s", cl.HostKeyFingerprint(), cl.Address(), how)
	}
	meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch)
	inst.Status.KeyFingerprint = ssh.FingerprintSHA256(c.Signer.PublicKey())
	SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected,
		fmt.Sprintf("connected to %s with host key %s", cl.Address(), cl.HostKeyFingerprint()))
	return cl, nil
}

func (c *Configurer) countSSHFailure(reason string) {
	if c.SSHFailed != nil {
		c.SSHFailed(reason)
	}
}

// addressNotAllowed records that the address policy refuses the instance's
// address: nothing was sent to it. It is the administrator's to fix (the
// address, or --allow-addresses), so it is reported like a refused key.
func (c *Configurer) addressNotAllowed(inst *winnodev1.WindowsInstance, err error) error {
	msg := fmt.Sprintf("WindowsInstance %s: %v", inst.Name, err)
	SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonAddressNotAllowed, msg)
	c.event(inst, corev1.EventTypeWarning, winnodev1.ReasonAddressNotAllowed, "%s", msg)
	return stepErr(StepConnect, winnodev1.ReasonAddressNotAllowed, errors.New(msg))
}
