package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// Where winnodectl keeps the host keys it pinned.
//
// A node added with winnodectl add has no WindowsInstance to keep its pinned
// host key in. The Node is no place for it: a kubelet may rewrite its own
// Node's annotations (NodeRestriction does not stop it), so a compromised
// node could choose the key remove, ssh and upgrade then trust. The pins
// live in ConfigMap kube-system/winnode-host-keys instead, which no node can
// write: data key = node name, value = the key in authorized_keys form. The
// annotation winnode.io/host-key the engine still writes is for people
// only; nothing here reads it as a pin.
const hostKeysConfigMap = "winnode-host-keys"

// hostKeyHelp says where to read a host's fingerprint, for the errors that
// ask for --host-key.
const hostKeyHelp = `read it on the host (ssh-keygen -lf C:\ProgramData\ssh\ssh_host_ed25519_key.pub prints "SHA256:...") and pass it: --host-key SHA256:...`

// addHostKeyFlag adds --host-key (add, upgrade, remove, ssh): the
// fingerprint to expect where no key is pinned yet, or a new one to accept.
func addHostKeyFlag(cmd *cobra.Command, fingerprint *string) {
	cmd.Flags().StringVar(fingerprint, "host-key", "",
		`the SHA256 fingerprint ("SHA256:...") the host's SSH key must have, pinned before the first connection; read it on the host: ssh-keygen -lf C:\ProgramData\ssh\ssh_host_ed25519_key.pub (docs/trust.md)`)
}

// readPin returns the key pinned for node, or "".
func readPin(ctx context.Context, kube kubernetes.Interface, node string) (string, error) {
	cm, err := kube.CoreV1().ConfigMaps(joinNamespace).Get(ctx, hostKeysConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the pinned host keys (ConfigMap %s/%s): %w", joinNamespace, hostKeysConfigMap, err)
	}
	return cm.Data[node], nil
}

// savePin records key as node's pin, creating the ConfigMap if needed.
// Unless replace, an entry with another key is an error: add replaces only
// the pin it loaded for the same host.
func savePin(ctx context.Context, kube kubernetes.Interface, node, key string, replace bool) error {
	cms := kube.CoreV1().ConfigMaps(joinNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, hostKeysConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: hostKeysConfigMap, Namespace: joinNamespace}}
			cm.Data = map[string]string{node: key}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), hostKeysConfigMap, err) // retried
			}
			return err
		}
		if err != nil {
			return err
		}
		switch old := cm.Data[node]; {
		case old == key:
			return nil
		case old != "" && !replace:
			return fmt.Errorf("another host key is pinned for node %s already; the host names itself like another host, or was reinstalled: to trust it, run add with --host-key and its fingerprint", node)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[node] = key
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("pinning the host key of node %s in ConfigMap %s/%s: %w", node, joinNamespace, hostKeysConfigMap, err)
	}
	return nil
}

// deletePin forgets node's pin (remove, once the Node is gone).
func deletePin(ctx context.Context, kube kubernetes.Interface, node string) error {
	cms := kube.CoreV1().ConfigMaps(joinNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, hostKeysConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, ok := cm.Data[node]; !ok {
			return nil
		}
		delete(cm.Data, node)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("forgetting the host key of node %s in ConfigMap %s/%s: %w (delete the entry by hand)", node, joinNamespace, hostKeysConfigMap, err)
	}
	return nil
}

// usePin sets the key inst must find at node's host: the pin kept for node,
// else the fingerprint of --host-key (already in spec.hostKeyFingerprint).
// A Node winnode configured without a kept pin is refused without
// --host-key: what its annotation says cannot be trusted, and trusting the
// host's key again would let anyone in the middle in.
func usePin(ctx context.Context, kube kubernetes.Interface, inst *winnodev1.WindowsInstance, node *corev1.Node) error {
	key, err := readPin(ctx, kube, node.Name)
	if err != nil {
		return err
	}
	if key != "" {
		pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key))
		if err != nil {
			return fmt.Errorf("the host key pinned for node %s in ConfigMap %s/%s is not an SSH public key (%v): delete that entry, then %s", node.Name, joinNamespace, hostKeysConfigMap, err, hostKeyHelp)
		}
		// A --host-key of another fingerprint replaces this pin (the
		// engine drops a pin whose fingerprint is not the expected one).
		inst.Status.HostKey, inst.Status.HostKeyFingerprint = key, ssh.FingerprintSHA256(pk)
		// Pins are kept only once the agent secured the host (persistPin):
		// the agent in its C:\k may be run. A --host-key of another
		// fingerprint drops the pin, and this with it.
		inst.Status.AgentSecured = true
		return nil
	}
	if inst.Spec.HostKeyFingerprint == "" && configuredByWinnode(node) {
		return fmt.Errorf("node %s has no host key pinned in ConfigMap %s/%s (the key in its annotation %s is not trusted: the node itself can write it), so the host cannot be checked; %s",
			node.Name, joinNamespace, hostKeysConfigMap, winnodev1.AnnotationHostKey, hostKeyHelp)
	}
	return nil
}

// configuredByWinnode: the Node bears winnode's annotations.
func configuredByWinnode(node *corev1.Node) bool {
	_, version := node.Annotations[winnodev1.AnnotationVersion]
	_, key := node.Annotations[winnodev1.AnnotationHostKey]
	return version || key
}

// persistPin is add's Configurer.Persist: it keeps the host key as soon as
// it is pinned, the node name known and the agent has secured the host
// (status.agentSecured, which a loaded pin stands for: usePin), so that an
// add that fails later still checks the key next time. loadedFor is the node whose pin add
// loaded (""): only that pin may be replaced (--host-key naming a new
// fingerprint). A host whose node name is another's is never pinned.
func persistPin(kube kubernetes.Interface, loadedFor string) func(context.Context, *winnodev1.WindowsInstance) error {
	return func(ctx context.Context, inst *winnodev1.WindowsInstance) error {
		node, key := inst.Status.NodeName, strings.TrimSpace(inst.Status.HostKey)
		if node == "" || key == "" || !inst.Status.AgentSecured || meta.IsStatusConditionTrue(inst.Status.Conditions, winnodev1.ConditionNodeNameConflict) {
			return nil
		}
		return savePin(ctx, kube, node, key, node == loadedFor)
	}
}
