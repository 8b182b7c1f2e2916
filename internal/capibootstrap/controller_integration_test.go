package capibootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/workload"
)

func readyIs(status metav1.ConditionStatus, reason string) func(*bootstrapv1.WinnodeConfig) bool {
	return func(c *bootstrapv1.WinnodeConfig) bool {
		r := meta.FindStatusCondition(c.Status.Conditions, bootstrapv1.ConditionReady)
		return r != nil && r.Status == status && r.Reason == reason && r.ObservedGeneration == c.Generation
	}
}

func (w *capiWorld) secret(t *testing.T, name string) (*corev1.Secret, error) {
	t.Helper()
	var s corev1.Secret
	err := w.client.Get(context.Background(), client.ObjectKey{Namespace: w.namespace, Name: name}, &s)
	return &s, err
}

// A WinnodeConfig owned by a Machine gets its bootstrap-data Secret and the
// status the bootstrap contract asks for.
func TestConfigOwnedByMachineGetsDataSecret(t *testing.T) {
	w := newCAPIWorld(t)
	w.startOperator(t)
	w.cluster(t, "winclus", false)
	name := "windows-workers-md-0-5f7c9d8b4-x2vzq"
	spec := bootstrapv1.WinnodeConfigSpec{FirewallPorts: []bootstrapv1.FirewallPort{{Port: 4789, Protocol: bootstrapv1.ProtocolUDP}}}
	w.machineWithConfig(t, "winclus", name, spec)

	cfg := w.waitFor(t, name, "dataSecretCreated", func(c *bootstrapv1.WinnodeConfig) bool {
		return ptr.Deref(c.Status.Initialization.DataSecretCreated, false)
	})
	if !readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable)(cfg) {
		t.Errorf("Ready condition: %+v", cfg.Status.Conditions)
	}
	if cfg.Status.DataSecretName != name {
		t.Errorf("status.dataSecretName = %q, want the config's name %q", cfg.Status.DataSecretName, name)
	}
	if want := ComputerName(w.namespace, name, "", 0); cfg.Status.ComputerName != want {
		t.Errorf("status.computerName = %q, want %q", cfg.Status.ComputerName, want)
	}
	if cfg.Status.KeyFingerprint != sshFingerprint(w) {
		t.Errorf("status.keyFingerprint = %q, want %q", cfg.Status.KeyFingerprint, sshFingerprint(w))
	}

	s, err := w.secret(t, name)
	if err != nil {
		t.Fatal(err)
	}
	want, err := BootstrapData(DataInput{Namespace: w.namespace, Machine: name, ComputerName: cfg.Status.ComputerName,
		PublicKey: w.key.Signer.PublicKey(), Firewall: firewallRules(spec.FirewallPorts)})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data[DataKey]) != string(want) {
		t.Errorf("Secret key %q is not the rendered bootstrap data:\n%s", DataKey, s.Data[DataKey])
	}
	if string(s.Data[FormatKey]) != bootstrapv1.DataSecretFormat {
		t.Errorf("Secret key %q = %q", FormatKey, s.Data[FormatKey])
	}
	if s.Type != clusterv1.ClusterSecretType || s.Labels[clusterv1.ClusterNameLabel] != "winclus" || !ptr.Deref(s.Immutable, false) {
		t.Errorf("Secret type %q, labels %v, immutable %v", s.Type, s.Labels, s.Immutable)
	}
	owner := metav1.GetControllerOf(s)
	if owner == nil || owner.Kind != "WinnodeConfig" || owner.UID != cfg.UID {
		t.Errorf("Secret's controller is %+v, want the WinnodeConfig", owner)
	}
	if len(w.events(t, name, EventReasonDataSecretCreated)) == 0 {
		t.Error("no DataSecretCreated event")
	}
}

func sshFingerprint(w *capiWorld) string { return sshkey.KeyFingerprint(w.key.Signer) }

// Bad input is refused with a clear condition and event, and nothing is
// written; the fixed spec then gets its Secret.
func TestInvalidSpecIsReportedAndFixable(t *testing.T) {
	w := newCAPIWorld(t)
	w.startOperator(t)
	w.cluster(t, "winclus", false)
	name := "bad-config"
	w.machineWithConfig(t, "winclus", name, bootstrapv1.WinnodeConfigSpec{
		ComputerNamePrefix: "web_server",
		FirewallPorts:      []bootstrapv1.FirewallPort{{Port: 0}},
	})
	cfg := w.waitFor(t, name, "Ready False, InvalidSpec", readyIs(metav1.ConditionFalse, bootstrapv1.ReasonInvalidSpec))
	msg := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionReady).Message
	for _, want := range []string{`spec.computerNamePrefix: Invalid value: "web_server"`, "spec.firewallPorts[0].port: Invalid value: 0"} {
		if !strings.Contains(msg, want) {
			t.Errorf("condition message %q does not say %q", msg, want)
		}
	}
	if notes := w.events(t, name, EventReasonInvalidSpec); len(notes) == 0 || !strings.Contains(notes[0], "spec.computerNamePrefix") {
		t.Errorf("InvalidSpec events: %q", notes)
	}
	if _, err := w.secret(t, name); !apierrors.IsNotFound(err) {
		t.Errorf("a Secret exists for an invalid config: %v", err)
	}
	if ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false) || cfg.Status.DataSecretName != "" {
		t.Errorf("status reports data for an invalid config: %+v", cfg.Status)
	}

	cfg.Spec = bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePush, ComputerNamePrefix: "web"}
	if err := w.client.Update(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg = w.waitFor(t, name, "Ready True after the fix", readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable))
	if !strings.HasPrefix(cfg.Status.ComputerName, "web-") || len(cfg.Status.ComputerName) > MaxComputerName {
		t.Errorf("computer name %q", cfg.Status.ComputerName)
	}
	if _, err := w.secret(t, name); err != nil {
		t.Errorf("no Secret after the fix: %v", err)
	}
}

// Machines with long names that share their first characters get distinct
// computer names of at most 15 characters.
func TestLongMachineNamesGetDistinctComputerNames(t *testing.T) {
	w := newCAPIWorld(t)
	w.startOperator(t)
	w.cluster(t, "winclus", false)
	names := []string{
		"windows-workers-md-0-5f7c9d8b4-aaaaa",
		"windows-workers-md-0-5f7c9d8b4-aaaab",
		"windows-workers-md-0-5f7c9d8b4-bbbbb",
	}
	for _, n := range names {
		w.machineWithConfig(t, "winclus", n, bootstrapv1.WinnodeConfigSpec{})
	}
	seen := map[string]string{}
	for _, n := range names {
		cfg := w.waitFor(t, n, "Ready", readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable))
		cn := cfg.Status.ComputerName
		if err := CheckComputerName(cn); err != nil {
			t.Error(err)
		}
		if other, dup := seen[cn]; dup {
			t.Errorf("%s and %s both got computer name %q", other, n, cn)
		}
		seen[cn] = n
		s, err := w.secret(t, n)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(s.Data[DataKey]), "$computerName = '"+cn+"'") {
			t.Errorf("%s: the bootstrap data does not set the computer name %q", n, cn)
		}
	}
}

// The provider waits for a Machine owner and a Cluster, honours a paused
// Cluster, and leaves a Secret it did not create alone.
func TestWaitsPausesAndRefusesForeignSecret(t *testing.T) {
	w := newCAPIWorld(t)
	w.startOperator(t)
	ctx := context.Background()

	if err := w.client.Create(ctx, w.config("orphan", bootstrapv1.WinnodeConfigSpec{})); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "orphan", "WaitingForMachine", readyIs(metav1.ConditionFalse, bootstrapv1.ReasonWaitingForMachine))

	w.machineWithConfig(t, "later", "no-cluster-yet", bootstrapv1.WinnodeConfigSpec{})
	w.waitFor(t, "no-cluster-yet", "WaitingForCluster", readyIs(metav1.ConditionFalse, bootstrapv1.ReasonWaitingForCluster))
	w.cluster(t, "later", false)
	w.waitFor(t, "no-cluster-yet", "Ready once the Cluster exists", readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable))

	c := w.cluster(t, "paused", true)
	w.machineWithConfig(t, "paused", "in-paused-cluster", bootstrapv1.WinnodeConfigSpec{})
	w.waitFor(t, "in-paused-cluster", "Paused", func(cfg *bootstrapv1.WinnodeConfig) bool {
		return meta.IsStatusConditionTrue(cfg.Status.Conditions, bootstrapv1.ConditionPaused)
	})
	if _, err := w.secret(t, "in-paused-cluster"); !apierrors.IsNotFound(err) {
		t.Errorf("a paused Cluster's config got a Secret: %v", err)
	}
	c.Spec.Paused = ptr.To(false)
	if err := w.client.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "in-paused-cluster", "Ready after unpausing", readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable))

	w.cluster(t, "foreign", false)
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: "taken"}, Data: map[string][]byte{"value": []byte("theirs")}}
	if err := w.client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	w.machineWithConfig(t, "foreign", "taken", bootstrapv1.WinnodeConfigSpec{})
	cfg := w.waitFor(t, "taken", "DataSecretNotWritten", readyIs(metav1.ConditionFalse, bootstrapv1.ReasonDataSecretNotWritten))
	if ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false) {
		t.Error("a Secret winnode did not write is reported as the bootstrap data")
	}
	s, err := w.secret(t, "taken")
	if err != nil || string(s.Data["value"]) != "theirs" {
		t.Errorf("the foreign Secret changed: %v %q", err, s.Data["value"])
	}
}

// The data is written only once the operator can act in the workload
// cluster of the Machine's Cluster: a missing or malformed kubeconfig
// Secret is a False WorkloadClusterReachable condition naming the cause
// (and Ready False, WaitingForWorkloadCluster); once the Secret is right,
// the data is written.
func TestWaitsForTheWorkloadCluster(t *testing.T) {
	w := newCAPIWorld(t)
	w.startOperator(t)
	reachable := func(status metav1.ConditionStatus, reason string) func(*bootstrapv1.WinnodeConfig) bool {
		return func(c *bootstrapv1.WinnodeConfig) bool {
			r := meta.FindStatusCondition(c.Status.Conditions, bootstrapv1.ConditionWorkloadClusterReachable)
			return r != nil && r.Status == status && r.Reason == reason && readyIs(metav1.ConditionFalse, bootstrapv1.ReasonWaitingForWorkloadCluster)(c)
		}
	}
	w.bareCluster(t, "no-kubeconfig", false)
	w.machineWithConfig(t, "no-kubeconfig", "waits", bootstrapv1.WinnodeConfigSpec{})
	cfg := w.waitFor(t, "waits", "KubeconfigSecretNotFound", reachable(metav1.ConditionFalse, workload.ReasonKubeconfigSecretNotFound))
	if msg := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionWorkloadClusterReachable).Message; !strings.Contains(msg, "no-kubeconfig-kubeconfig does not exist") {
		t.Errorf("condition message %q does not name the Secret", msg)
	}
	if notes := w.events(t, "waits", workload.ReasonKubeconfigSecretNotFound); len(notes) == 0 {
		t.Error("no Warning event naming the missing Secret")
	}

	w.bareCluster(t, "garbled", false)
	w.kubeconfigSecret(t, "garbled", []byte("not: [a kubeconfig"))
	w.machineWithConfig(t, "garbled", "garbled-data", bootstrapv1.WinnodeConfigSpec{})
	w.waitFor(t, "garbled-data", "KubeconfigInvalid", reachable(metav1.ConditionFalse, workload.ReasonKubeconfigInvalid))
	for _, name := range []string{"waits", "garbled-data"} {
		if _, err := w.secret(t, name); !apierrors.IsNotFound(err) {
			t.Errorf("%s: bootstrap data written while the workload cluster cannot be used: %v", name, err)
		}
	}

	w.kubeconfigSecret(t, "no-kubeconfig", nil)
	cfg = w.waitFor(t, "waits", "Ready once the Secret exists", readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable))
	if !meta.IsStatusConditionTrue(cfg.Status.Conditions, bootstrapv1.ConditionWorkloadClusterReachable) {
		t.Errorf("conditions %+v", cfg.Status.Conditions)
	}
}
