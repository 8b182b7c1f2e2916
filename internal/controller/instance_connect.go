package controller

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
func hostKeyBlocked(inst *winnodev1.WindowsInstance) bool {
	return inst.Status.HostKey != "" && meta.IsStatusConditionTrue(inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch)
}

// connect opens an SSH connection with the operator's key, trusting the host
// key on first use and pinning it in the status; a different key later is a
// HostKeyMismatch that stops the work.
func (c *Configurer) connect(ctx context.Context, inst *winnodev1.WindowsInstance) (*host.Client, error) {
	if c.Signer == nil {
		setCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonNoPrivateKey,
			"no usable SSH private key: create Secret cloud-private-key with key private-key.pem")
		return nil, stepErr(StepConnect, winnodev1.ReasonNoPrivateKey, errors.New("no usable SSH private key (Secret cloud-private-key, key private-key.pem)"))
	}
	if inst.Status.HostKey == "" && meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch) == nil {
		// A host that already is a node (configured before this instance
		// existed: an instance deleted without its finalizer, or winnodectl
		// add) keeps the key pinned on its Node rather than being trusted
		// again. An administrator who cleared a mismatch is not overruled.
		c.pinFromNode(ctx, inst)
	}
	cl, err := host.Connect(ctx, host.Options{
		Address:       inst.Spec.Address,
		Port:          int(inst.SSHPort()),
		User:          inst.Spec.Username,
		Signer:        c.Signer,
		PinnedHostKey: inst.Status.HostKey,
		DialTimeout:   c.dialTimeout(),
	})
	var (
		mismatch *host.HostKeyMismatchError
		auth     *host.AuthError
	)
	switch {
	case err == nil:
	case errors.As(err, &mismatch):
		c.countSSHFailure(winnodev1.ReasonHostKeyChanged)
		msg := fmt.Sprintf("%v; "+ClearHostKeyHint, err, inst.Name)
		setCondition(inst, winnodev1.ConditionHostKeyMismatch, metav1.ConditionTrue, winnodev1.ReasonHostKeyChanged, msg)
		setCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonHostKeyChanged, "the host presented a host key other than the pinned one")
		return nil, stepErr(StepConnect, winnodev1.ReasonHostKeyChanged, fmt.Errorf("%w: %s", errHostKeyMismatch, msg))
	case errors.As(err, &auth):
		c.countSSHFailure(winnodev1.ReasonAuthFailed)
		setCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonAuthFailed, err.Error())
		return nil, stepErr(StepConnect, winnodev1.ReasonAuthFailed, err)
	default:
		c.countSSHFailure(winnodev1.ReasonUnreachable)
		setCondition(inst, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonUnreachable, err.Error())
		return nil, stepErr(StepConnect, winnodev1.ReasonUnreachable, err)
	}

	if inst.Status.HostKey == "" {
		inst.Status.HostKey = cl.HostKey()
		inst.Status.HostKeyFingerprint = cl.HostKeyFingerprint()
		c.event(inst, corev1.EventTypeNormal, winnodev1.ReasonHostKeyPinned, "trusted the host key %s of %s on first use", cl.HostKeyFingerprint(), cl.Address())
	}
	meta.RemoveStatusCondition(&inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch)
	inst.Status.KeyFingerprint = ssh.FingerprintSHA256(c.Signer.PublicKey())
	setCondition(inst, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected,
		fmt.Sprintf("connected to %s with host key %s", cl.Address(), cl.HostKeyFingerprint()))
	return cl, nil
}

// pinFromNode takes the host key pinned on the host's Node (annotation
// winnode.io/host-key), found by the instance's node name or by address.
func (c *Configurer) pinFromNode(ctx context.Context, inst *winnodev1.WindowsInstance) {
	var key string
	if name := nodeName(inst); name != "" {
		if node, err := c.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			key = node.Annotations[winnodev1.AnnotationHostKey]
		}
	} else if nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP && a.Address == inst.Spec.Address && n.Annotations[winnodev1.AnnotationHostKey] != "" {
					key = n.Annotations[winnodev1.AnnotationHostKey]
				}
			}
		}
	}
	if key == "" {
		return
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key))
	if err != nil {
		return
	}
	inst.Status.HostKey = key
	inst.Status.HostKeyFingerprint = ssh.FingerprintSHA256(pub)
	c.Log.Info("pinned the host key found on the host's Node", "instance", inst.Name, "hostKey", inst.Status.HostKeyFingerprint)
}

func (c *Configurer) countSSHFailure(reason string) {
	if c.SSHFailed != nil {
		c.SSHFailed(reason)
	}
}
