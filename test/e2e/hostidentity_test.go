package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// A host renames itself (Rename-Computer, then a restart) after its join
// credential was issued for its first name: the instance keeps the name
// fixed before that credential, gets NodeNameChanged, is issued no new
// credential, and no Node and no approved certificate carry the new name.
func TestHostRenamedAfterItsCredential(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	oldName, newName := strings.ToLower(h.Hostname()), "REN-"+h.Hostname()[4:]
	var once sync.Once
	var tokenAtRename string
	renamed := make(chan struct{})
	w.startOperator(t, operatorOptions{afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		// StepPlan comes right after the credentials were issued.
		if inst.Name != "renamer" || step != configure.StepPlan {
			return
		}
		once.Do(func() {
			defer close(renamed)
			tokenAtRename = inst.Status.BootstrapTokenID
			if err := h.RenameComputer(newName); err != nil {
				t.Error(err)
			}
			if err := h.Reboot(); err != nil {
				t.Error(err)
			}
		})
	}})
	w.instanceFor(t, "renamer", h)
	inst := w.waitCondition(t, "renamer", winnodev1.ConditionNodeNameChanged, "True", winnodev1.ReasonNodeNameChanged, 3*time.Minute)
	<-renamed
	if inst.Status.NodeName != oldName || !strings.Contains(inst.Status.LastError, strings.ToLower(newName)) {
		t.Errorf("renamer: nodeName %q, lastError %q; want %s kept and the new name %s named", inst.Status.NodeName, inst.Status.LastError, oldName, newName)
	}
	w.waitEvents(t, metav1.NamespaceDefault, "renamer", winnodev1.ReasonNodeNameChanged)
	if tokenAtRename == "" {
		t.Fatal("no bootstrap token was issued before the rename")
	}
	for _, s := range w.instanceTokens(t, "renamer") {
		if s.Name != "bootstrap-token-"+tokenAtRename {
			t.Errorf("a new join credential %s was issued after the host renamed itself", s.Name)
		}
	}
	ctx := context.Background()
	if _, err := w.kube.CoreV1().Nodes().Get(ctx, strings.ToLower(newName), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s of the new name: %v; want none", strings.ToLower(newName), err)
	}
	if csr := w.approvedClientCSRFor(t, strings.ToLower(newName)); csr != "" {
		t.Errorf("CSR %s for the new name %s was approved", csr, newName)
	}
}

// approvedClientCSRFor names an approved CSR whose subject is node name's
// ("" when there is none).
func (w *world) approvedClientCSRFor(t testing.TB, name string) string {
	t.Helper()
	csrs, err := w.kube.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		approved := false
		for _, cond := range c.Status.Conditions {
			approved = approved || cond.Type == certificatesv1.CertificateApproved
		}
		block, _ := pem.Decode(c.Spec.Request)
		if !approved || block == nil {
			continue
		}
		if req, err := x509.ParseCertificateRequest(block.Bytes); err == nil && req.Subject.CommonName == "system:node:"+name {
			return c.Name
		}
	}
	return ""
}

// A VM cloned with another host's SSH host keys, listed as an instance of
// its own: HostKeyConflict, and nothing is run on it (no program, no
// SFTP), neither while it is refused nor when its instance is deleted.
func TestHostWithAnotherInstancesHostKey(t *testing.T) {
	w := getWorld(t)
	owner := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "key-owner", owner)
	testkit.Eventually(t, 2*time.Minute, "key-owner's host key pinned", func() (bool, string) {
		inst := w.get(t, "key-owner")
		return inst.Status.HostKey != "", "phase " + string(inst.Status.Phase)
	})

	clone := w.newHost(t)
	if err := clone.CloneHostKeysOf(owner); err != nil {
		t.Fatal(err)
	}
	w.instanceFor(t, "key-clone", clone)
	inst := w.waitCondition(t, "key-clone", winnodev1.ConditionHostKeyConflict, "True", winnodev1.ReasonHostKeyConflict, 2*time.Minute)
	if inst.Status.Phase != winnodev1.PhaseFailed || !strings.Contains(inst.Status.LastError, "key-owner") {
		t.Errorf("key-clone: phase %s, lastError %q; want Failed naming key-owner", inst.Status.Phase, inst.Status.LastError)
	}
	if inst.Status.HostKey != "" || inst.Status.HostConfigured || inst.Status.BootstrapTokenID != "" {
		t.Errorf("key-clone: hostKey %q, hostConfigured %v, token %q; want nothing pinned, configured or issued", inst.Status.HostKey, inst.Status.HostConfigured, inst.Status.BootstrapTokenID)
	}
	w.waitEvents(t, metav1.NamespaceDefault, "key-clone", winnodev1.ReasonHostKeyConflict)
	if c := clone.Counters(); c.Connections == 0 || c.Execs != 0 || c.SFTP != 0 {
		t.Errorf("the clone's host: %+v; want connections (the key was seen) and no program or SFTP", c)
	}
	w.deleteAndWait(t, "key-clone")
	if c := clone.Counters(); c.Execs != 0 || c.SFTP != 0 {
		t.Errorf("deleting key-clone ran something on its host: %+v", c)
	}
}

// A host named like the API server (its computer name is "kubernetes", a
// name of the API server's serving certificate, so its kubelet's serving
// certificate could pose as the API server): refused with
// NodeNameNotAllowed and an event before anything is configured: no name
// fixed, no credential, nothing installed.
func TestHostNamedLikeTheAPIServer(t *testing.T) {
	w := getWorld(t)
	h := w.newHostNamed(t, true, "KUBERNETES")
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "api-name", h)
	inst := w.waitCondition(t, "api-name", winnodev1.ConditionNodeNameConflict, "True", winnodev1.ReasonNodeNameNotAllowed, 2*time.Minute)
	if !strings.Contains(inst.Status.LastError, "API server") {
		t.Errorf("lastError %q does not say the name is the API server's", inst.Status.LastError)
	}
	w.waitEvents(t, metav1.NamespaceDefault, "api-name", winnodev1.ReasonNodeNameNotAllowed)
	if inst.Status.NodeNameFixedAt != nil || inst.Status.BootstrapTokenID != "" || inst.Status.HostConfigured || len(w.instanceTokens(t, "api-name")) != 0 {
		t.Errorf("api-name: nameFixedAt %v, token %q, hostConfigured %v: want nothing fixed, issued or configured",
			inst.Status.NodeNameFixedAt, inst.Status.BootstrapTokenID, inst.Status.HostConfigured)
	}
	if hostFileExists(t, h, `C:\k\kubelet.exe`) {
		t.Error("the kubelet was installed on a host named like the API server")
	}
}

// A Node of the host's name appears after the host was issued its
// credential, before its kubelet registered (created here, as the
// configuration reaches apply, by someone other than the host's kubelet):
// it is not the instance's, because the approver never approved this
// instance's client certificate while no such Node existed. The instance
// gets NodeNameConflict, records no UID, and leaves that Node untouched.
func TestNodeAppearingAfterTheCredentialIsNotAdopted(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	name := strings.ToLower(h.Hostname())
	var once sync.Once
	createdCh := make(chan *corev1.Node, 1)
	w.startOperator(t, operatorOptions{afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if inst.Name != "stalled" || step != configure.StepApply {
			return
		}
		once.Do(func() {
			n := builder.Node(name).Labels(map[string]string{"example.com/owner": "someone-else"}).Build()
			created, err := w.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
			if err != nil {
				t.Error(err)
			}
			createdCh <- created
		})
	}})
	t.Cleanup(func() { _ = w.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	w.instanceFor(t, "stalled", h)
	inst := w.waitCondition(t, "stalled", winnodev1.ConditionNodeNameConflict, "True", winnodev1.ReasonNodeNameConflict, 3*time.Minute)
	created := <-createdCh
	if created == nil {
		t.Fatal("the Node was not created")
	}
	if inst.Status.NodeUID != "" || inst.Status.Phase == winnodev1.PhaseReady {
		t.Errorf("stalled: nodeUID %q, phase %s; want no UID recorded for a Node that appeared after the credential", inst.Status.NodeUID, inst.Status.Phase)
	}
	if !strings.Contains(inst.Status.LastError, string(created.UID)) {
		t.Errorf("lastError %q does not name Node %s (uid %s)", inst.Status.LastError, name, created.UID)
	}
	w.nodeUntouched(t, created)
}

// A clone claims the name of a host that is still pending (its name fixed
// and its credential issued, its configuration not done): the clone is
// refused with NodeNameConflict naming the pending instance, and gets no
// credential.
func TestHostClaimingAPendingHostsName(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	paused, release := make(chan struct{}), make(chan struct{})
	var pauseOnce, releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	w.startOperator(t, operatorOptions{afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
		if inst.Name != "pending" || step != configure.StepApply {
			return
		}
		pauseOnce.Do(func() {
			close(paused)
			<-release // holds this configuration (one worker) mid-way
		})
	}})
	w.instanceFor(t, "pending", h)
	<-paused
	if got := w.get(t, "pending"); got.Status.NodeNameFixedAt == nil || got.Status.Phase == winnodev1.PhaseReady {
		t.Fatalf("pending: nameFixedAt %v, phase %s; want a fixed name and not Ready", got.Status.NodeNameFixedAt, got.Status.Phase)
	}
	clone := w.newHostNamed(t, true, h.Hostname())
	w.instanceFor(t, "pending-clone", clone)
	inst := w.waitCondition(t, "pending-clone", winnodev1.ConditionNodeNameConflict, "True", winnodev1.ReasonNodeNameConflict, 2*time.Minute)
	if !strings.Contains(inst.Status.LastError, "WindowsInstance pending;") || inst.Status.BootstrapTokenID != "" || len(w.instanceTokens(t, "pending-clone")) != 0 {
		t.Errorf("pending-clone: lastError %q, token %q; want the pending instance named and no credential", inst.Status.LastError, inst.Status.BootstrapTokenID)
	}
	releaseOnce.Do(func() { close(release) })
	w.waitReady(t, "pending", 3*time.Minute)
}

// One host listed twice, under its IP and under a DNS name that resolves
// to that IP: a name and an IP of the same host are one host. The instance
// that came second gets AddressConflict naming the first, and nothing is
// run for it (it never connects).
func TestHostListedUnderANameAndItsIP(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	const name = "win-by-name.example.test"
	w.startOperator(t, operatorOptions{resolve: func(_ context.Context, host string) []netip.Addr {
		if host == name {
			return []netip.Addr{netip.MustParseAddr(h.IP())}
		}
		return nil
	}})
	w.instanceFor(t, "by-ip", h)
	testkit.Eventually(t, 2*time.Minute, "by-ip's host key pinned", func() (bool, string) {
		inst := w.get(t, "by-ip")
		return inst.Status.HostKey != "", "phase " + string(inst.Status.Phase)
	})
	byName := builder.Instance("by-name").Host(name, h.User()).Port(int32(h.Port())).Manual().Build()
	if err := w.client.Create(context.Background(), byName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.forget("by-name") })
	inst := w.waitCondition(t, "by-name", winnodev1.ConditionAddressConflict, "True", winnodev1.ReasonAddressConflict, 2*time.Minute)
	if !strings.Contains(inst.Status.LastError, "WindowsInstance by-ip") || inst.Status.HostKey != "" || inst.Status.HostConfigured {
		t.Errorf("by-name: lastError %q, hostKey %q, hostConfigured %v; want by-ip named, nothing pinned or configured",
			inst.Status.LastError, inst.Status.HostKey, inst.Status.HostConfigured)
	}
	w.waitEvents(t, metav1.NamespaceDefault, "by-name", winnodev1.ReasonAddressConflict)
}
