package cli

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/fixture"
)

// TestPinsNotFromNodeAnnotation: add keeps the host key in ConfigMap
// kube-system/winnode-host-keys; a node that rewrites its own annotation
// winnode.io/host-key (as a kubelet may) changes nothing ssh and remove
// trust; a node with no kept pin is refused until --host-key names the
// fingerprint; remove forgets the pin.
func TestPinsNotFromNodeAnnotation(t *testing.T) {
	cl := getCluster(t)
	h, payloadDir, keyFile := hostToAdd(t)
	kc := cl.env.KubeconfigPath
	port := strconv.Itoa(h.Port())
	nodeName := strings.ToLower(h.Hostname())
	kube, err := kubernetes.NewForConfig(cl.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { cleanupNode(t, cl, nodeName) })

	r := run(t, "", "add", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "5m")
	if r.code != ExitOK {
		t.Fatalf("add: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	realKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.HostKey())))
	if got, _ := readPin(ctx, kube, nodeName); got != realKey {
		t.Errorf("pin kept for %s: %q, want the host's key %q", nodeName, got, realKey)
		if err := savePin(ctx, kube, nodeName, realKey, true); err != nil { // to test the rest
			t.Fatal(err)
		}
	}

	// The node puts an attacker's key in its own annotation.
	attacker := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(fixture.NewKey(t).Signer.PublicKey())))
	patch := `{"metadata":{"annotations":{"` + winnodev1.AnnotationHostKey + `":"` + attacker + `"}}}`
	if _, err := kube.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	sshArgs := []string{"ssh", "--kubeconfig", kc, "--ssh-key", keyFile, "--port", port, nodeName, "--", managedContainerd, "--version"}
	r = run(t, "", sshArgs...)
	if r.code != 0 || !strings.Contains(r.out, "containerd") {
		t.Errorf("ssh with the annotation rewritten must check the kept pin: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}

	// No kept pin (a node added before pins moved): only the annotation,
	// which is not trusted; --host-key is asked for.
	if err := deletePin(ctx, kube, nodeName); err != nil {
		t.Fatal(err)
	}
	removeArgs := []string{"remove", nodeName, "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--timeout", "2m"}
	for name, args := range map[string][]string{
		"ssh":     sshArgs,
		"remove":  removeArgs,
		"upgrade": {"upgrade", h.IP(), "--port", port, "--ssh-key", keyFile, "--allow-addresses", simHosts, "--kubeconfig", kc, "--payload-dir", payloadDir, "--timeout", "2m"},
	} {
		r = run(t, "", args...)
		if r.code == ExitOK || !strings.Contains(r.err, "--host-key SHA256:") || !strings.Contains(r.err, "ssh-keygen -lf") {
			t.Errorf("%s of a node with no kept pin: exit %d, want a refusal asking for --host-key\nstdout:\n%s\nstderr:\n%s", name, r.code, r.out, r.err)
		}
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the refused remove touched Node %s: %v", nodeName, err)
	}
	r = run(t, "", append(sshArgs[:7:7], "--host-key", h.Fingerprint(), nodeName, "--", managedContainerd, "--version")...)
	if r.code != 0 || !strings.Contains(r.out, "containerd") {
		t.Errorf("ssh --host-key with the host's fingerprint: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}

	// With the pin kept again, remove checks it (not the annotation),
	// cleans the host and forgets the pin.
	if err := savePin(ctx, kube, nodeName, realKey, false); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", removeArgs...)
	if r.code != ExitOK {
		t.Fatalf("remove: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if got := serviceNames(h); slices.Contains(got, "kubelet") {
		t.Errorf("remove left the host alone (it trusted the annotation, not the pin): services %v\n%s", got, r.out)
	}
	if got, err := readPin(ctx, kube, nodeName); err != nil || got != "" {
		t.Errorf("pin after remove: %q, %v; want none", got, err)
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s after remove: %v", nodeName, err)
	}
}
