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
	"github.com/winnode/winnode/internal/identity"
	"github.com/winnode/winnode/internal/inventory"
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
// HostKeyMismatch that stops the work. An address another instance's host
// has (AddressConflict), or a host key another instance pinned
// (HostKeyConflict), stops it before anything runs on the host.
func (c *Configurer) connect(ctx context.Context, inst *winnodev1.WindowsInstance) (*host.Client, error) {
	if c.Signer == nil {
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonNoPrivateKey,
			"no usable SSH private key: create Secret cloud-private-key with key private-key.pem")
		return nil, stepErr(StepConnect, winnodev1.ReasonNoPrivateKey, errors.New("no usable SSH private key (Secret cloud-private-key, key private-key.pem)"))
	}
	if err := c.Addresses.CheckAddress(inst.Spec.Address); err != nil {
		return nil, c.addressNotAllowed(inst, err)
	}
	if err := c.checkAddressConflict(ctx, inst); err != nil {
		return nil, err
	}
	expectFingerprint(inst)
	// No key is ever taken from a Node: a kubelet may write its own Node's
	// annotations (NodeRestriction does not stop it), so what a Node says
	// cannot decide which host is trusted. Without a pinned key, the first
	// connection trusts the key (or checks spec.hostKeyFingerprint).
	cl, err := host.Connect(ctx, c.hostOptions(inst))
	if err != nil {
		return nil, c.connectFailed(inst, err)
	}
	if err := c.checkHostKeyConflict(ctx, inst, cl); err != nil {
		cl.Close()
		return nil, err
	}
	c.connected(inst, cl)
	return cl, nil
}

// hostOptions is how the instance's host is reached.
func (c *Configurer) hostOptions(inst *winnodev1.WindowsInstance) host.Options {
	return host.Options{
		Address:       inst.Spec.Address,
		Port:          int(inst.SSHPort()),
		User:          inst.Spec.Username,
		Signer:        c.Signer,
		PinnedHostKey: inst.Status.HostKey,
		// Checked only while no key is pinned yet.
		ExpectedFingerprint: inst.Spec.HostKeyFingerprint,
		DialTimeout:         c.dialTimeout(),
		CheckDial:           c.Addresses.CheckDial,
		MaxOutput:           c.MaxAnswer,
		MinTransferRate:     c.MinTransferRate,
		SlowTransferGrace:   c.SlowTransferGrace,
	}
}

// connectFailed records why the connection failed.
func (c *Configurer) connectFailed(inst *winnodev1.WindowsInstance, err error) error {
	var (
		mismatch *host.HostKeyMismatchError
		auth     *host.AuthError
		refused  *host.AddressNotAllowedError
	)
	switch {
	case errors.As(err, &refused):
		return c.addressNotAllowed(inst, err)
	case errors.As(err, &mismatch):
		c.countSSHFailure(winnodev1.ReasonHostKeyChanged)
		hint := ClearHostKeyHint
		if inst.Spec.HostKeyFingerprint != "" {
			hint = ExpectedHostKeyHint
		}
		msg := fmt.Sprintf("%v; "+hint, err, inst.Name)
		SetCondition(inst, winnodev1.ConditionHostKeyMismatch, metav1.ConditionTrue, winnodev1.ReasonHostKeyChanged, msg)
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonHostKeyChanged, "the host presented a host key other than the pinned one")
		return stepErr(StepConnect, winnodev1.ReasonHostKeyChanged, fmt.Errorf("%w: %s", errHostKeyMismatch, msg))
	case errors.As(err, &auth):
		c.countSSHFailure(winnodev1.ReasonAuthFailed)
		// Which key was refused, so that a Machine is replaced only for a
		// key rotation (internal/machineapi).
		inst.Status.RefusedKeyFingerprint = ssh.FingerprintSHA256(c.Signer.PublicKey())
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonAuthFailed, err.Error())
		return stepErr(StepConnect, winnodev1.ReasonAuthFailed, err)
	default:
		c.countSSHFailure(winnodev1.ReasonUnreachable)
		SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonUnreachable, err.Error())
		return stepErr(StepConnect, winnodev1.ReasonUnreachable, err)
	}
}

// connected records a connection: the host key pinned on first use, the
// operator key the host accepts, Reachable.
func (c *Configurer) connected(inst *winnodev1.WindowsInstance, cl *host.Client) {
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
	inst.Status.RefusedKeyFingerprint = ""
	SetCondition(inst, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected,
		fmt.Sprintf("connected to %s with host key %s", cl.Address(), cl.HostKeyFingerprint()))
}

// checkAddressConflict refuses, before any connection, an address that
// reaches the host of another instance that keeps it
// (identity.HostOwner with inventory.SameHost: a DNS name and an IP of one
// host are one host).
func (c *Configurer) checkAddressConflict(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	others, err := c.peers(ctx, inventory.LookupKeys(ctx, endpoint(inst), c.Resolve)...)
	if err != nil {
		return listErr(inst, err)
	}
	same := func(a, b *winnodev1.WindowsInstance) bool {
		return inventory.SameHost(ctx, endpoint(a), endpoint(b), c.Resolve)
	}
	owner := identity.HostOwner(inst, others, same)
	if owner == "" {
		meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionAddressConflict)
		return nil
	}
	msg := fmt.Sprintf("WindowsInstance %s: %s port %d reaches the host of WindowsInstance %s; winnode connects to a host for one instance only. "+
		"Delete this instance, or that one if this is the one to keep", inst.Name, inst.Spec.Address, inst.SSHPort(), owner)
	return c.hostConflict(inst, winnodev1.ConditionAddressConflict, winnodev1.ReasonAddressConflict, msg)
}

// checkHostKeyConflict refuses a host whose key another instance pinned
// and keeps (identity.HostKeyOwner): the same host under another address,
// or a VM cloned with its SSH keys. Nothing is run on it.
func (c *Configurer) checkHostKeyConflict(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client) error {
	others, err := c.peers(ctx, identity.HostKeyKey(cl.HostKey()))
	if err != nil {
		return listErr(inst, err)
	}
	owner := identity.HostKeyOwner(inst, cl.HostKey(), others)
	if owner == "" {
		meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionHostKeyConflict)
		return nil
	}
	msg := fmt.Sprintf("WindowsInstance %s: host %s presented the host key %s, which WindowsInstance %s pinned; winnode runs nothing on it. "+
		"If it is the same host, delete one of the two instances; if it is a VM cloned with its SSH keys, give it keys of its own "+
		"(delete C:\\ProgramData\\ssh\\ssh_host_* and restart sshd, as winnode's user data does at first boot)", inst.Name, cl.Address(), cl.HostKeyFingerprint(), owner)
	return c.hostConflict(inst, winnodev1.ConditionHostKeyConflict, winnodev1.ReasonHostKeyConflict, msg)
}

// listErr is the step error of a conflict check whose instances do not
// list.
func listErr(inst *winnodev1.WindowsInstance, err error) error {
	return stepErr(StepConnect, winnodev1.ReasonUnreachable, fmt.Errorf("listing WindowsInstances to compare WindowsInstance %s with: %w", inst.Name, err))
}

// hostConflict records a conflict over a host and returns the step error.
func (c *Configurer) hostConflict(inst *winnodev1.WindowsInstance, condition, reason, msg string) error {
	SetCondition(inst, condition, metav1.ConditionTrue, reason, msg)
	c.event(inst, corev1.EventTypeWarning, reason, "%s", msg)
	return stepErr(StepConnect, reason, errors.New(msg))
}

// endpoint is where an instance's host is reached.
func endpoint(wi *winnodev1.WindowsInstance) inventory.Endpoint {
	return inventory.Endpoint{Address: wi.Spec.Address, Port: wi.SSHPort()}
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
