package capibootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

// A Pull-mode Machine of a self-hosted Cluster (its workload cluster is
// the test's control plane), followed from its data to its nodeRef as
// Cluster API's kubeadm bootstrap provider follows its Machines:
//   - the data carries a join config for the Machine's node name with the
//     workload cluster's API server and CA, and a bootstrap token of that
//     cluster that authenticates there in winnode's group, its ID and
//     expiry (the provider's TTL) in the config's status;
//   - NodeJoined is False (WaitingForNode), then, past the join timeout,
//     NodeJoinTimedOut with a message naming the host's logs and a Warning
//     event;
//   - the Node of its name, registered without a provider ID, gets the
//     Machine's;
//   - once the Machine has a nodeRef, NodeJoined is True and the token is
//     deleted from the workload cluster.
func TestPullModeFollowsTheMachine(t *testing.T) {
	w := newCAPIWorld(t)
	w.startOperatorWith(t, Pull{Version: "v0.5.2", JoinTimeout: 5 * time.Second})
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(w.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	w.cluster(t, "pulled", false)
	w.machineWithConfig(t, "pulled", "pull-1", bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePull})
	cfg := w.waitFor(t, "pull-1", "Ready", readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable))
	tok := cfg.Status.BootstrapToken
	if tok == nil || cfg.Status.KeyFingerprint != "" {
		t.Fatalf("status %+v: want a bootstrap token and no SSH key", cfg.Status)
	}
	if ttl := time.Until(tok.Expires.Time); ttl <= 0 || ttl > bootstrap.ClusterAPITokenTTL {
		t.Errorf("the token expires in %s; want within Cluster API's TTL %s", ttl, bootstrap.ClusterAPITokenTTL)
	}
	join := w.joinConfigOf(t, "pull-1")
	if join.NodeName != plan.NodeName(cfg.Status.ComputerName) || join.OperatorVersion != "v0.5.2" || join.Machine != w.namespace+"/pull-1" {
		t.Errorf("join config: node %q, operator %q, Machine %q; config status %+v", join.NodeName, join.OperatorVersion, join.Machine, cfg.Status)
	}
	if ci, err := bootstrap.LoadClusterInfo(ctx, kube); err != nil || join.Cluster.Server != ci.Server || string(join.Cluster.CAData) != string(ci.CAData) {
		t.Errorf("join config's cluster %s; want the workload cluster's %+v (%v)", join.Cluster.Server, ci, err)
	}
	value := join.BootstrapToken.Reveal()
	if !strings.HasPrefix(value, tok.ID+".") {
		t.Errorf("the data's token is not the one the status names (%s)", tok.ID)
	}
	tr, err := kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: value}}, metav1.CreateOptions{})
	if err != nil || !tr.Status.Authenticated || tr.Status.User.Username != bootstrap.Username(tok.ID) || !slices.Contains(tr.Status.User.Groups, bootstrap.Group) {
		t.Errorf("the data's token in the workload cluster: %+v, %v; want it to authenticate as %s in %s", tr.Status, err, bootstrap.Username(tok.ID), bootstrap.Group)
	}

	timedOut := w.waitFor(t, "pull-1", "NodeJoinTimedOut", joinedIs(metav1.ConditionFalse, bootstrapv1.ReasonNodeJoinTimedOut))
	msg := meta.FindStatusCondition(timedOut.Status.Conditions, bootstrapv1.ConditionNodeJoined).Message
	for _, want := range []string{joinconfig.LogPath, CloudbaseInitLog} {
		if !strings.Contains(msg, want) {
			t.Errorf("NodeJoinTimedOut's message %q does not name %s", msg, want)
		}
	}
	if len(w.events(t, "pull-1", bootstrapv1.ReasonNodeJoinTimedOut)) == 0 {
		t.Error("no NodeJoinTimedOut event")
	}

	// The host joins: its Node registers without a provider ID, and the
	// infrastructure provider records the Machine's.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: join.NodeName}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	m := &clusterv1.Machine{}
	if err := w.client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: "pull-1"}, m); err != nil {
		t.Fatal(err)
	}
	m.Spec.ProviderID = "winsim:///i-0123456789abcdef0"
	if err := w.client.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the Node to get the Machine's provider ID", func() (bool, string) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Spec.ProviderID == m.Spec.ProviderID, "providerID " + n.Spec.ProviderID
	})

	// Cluster API links them (status.nodeRef): the token goes.
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node.Name}
	if err := w.client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	joined := w.waitFor(t, "pull-1", "NodeJoined", joinedIs(metav1.ConditionTrue, bootstrapv1.ReasonNodeJoined))
	if joined.Status.BootstrapToken != nil {
		t.Errorf("status.bootstrapToken %+v after the join", joined.Status.BootstrapToken)
	}
	if _, err := kube.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+tok.ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the joined Machine's bootstrap token Secret: %v; want it deleted", err)
	}
}

// A workload cluster whose API server does not authenticate bootstrap
// tokens: a Pull-mode config says so (Ready False,
// BootstrapTokenAuthUnavailable, and a Warning event), and no data is
// written.
func TestPullModeNeedsBootstrapTokenAuth(t *testing.T) {
	w := newCAPIWorld(t)
	wl, err := testenv.Start(context.Background(), testenv.Options{NoBootstrapTokenAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wl.Stop() })
	w.startOperator(t)
	s, err := wl.KubeconfigSecret(w.namespace, "no-tokens")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	w.bareCluster(t, "no-tokens", false)
	w.machineWithConfig(t, "no-tokens", "pull-no-tokens", bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePull})
	cfg := w.waitFor(t, "pull-no-tokens", "BootstrapTokenAuthUnavailable", readyIs(metav1.ConditionFalse, bootstrapv1.ReasonBootstrapTokenAuthUnavailable))
	if msg := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionReady).Message; !strings.Contains(msg, "spec.mode: Push") {
		t.Errorf("message %q does not say what to do", msg)
	}
	if len(w.events(t, "pull-no-tokens", bootstrapv1.ReasonBootstrapTokenAuthUnavailable)) == 0 {
		t.Error("no BootstrapTokenAuthUnavailable event")
	}
	if _, err := w.secret(t, "pull-no-tokens"); !apierrors.IsNotFound(err) {
		t.Errorf("bootstrap data written for a cluster without bootstrap-token authentication: %v", err)
	}
	if cfg.Status.BootstrapToken != nil {
		t.Errorf("a token was recorded: %+v", cfg.Status.BootstrapToken)
	}
}

// joinedIs matches condition NodeJoined of status and reason.
func joinedIs(status metav1.ConditionStatus, reason string) func(*bootstrapv1.WinnodeConfig) bool {
	return func(c *bootstrapv1.WinnodeConfig) bool {
		j := meta.FindStatusCondition(c.Status.Conditions, bootstrapv1.ConditionNodeJoined)
		return j != nil && j.Status == status && j.Reason == reason
	}
}

// joinConfigOf reads the join config out of the config's bootstrap data
// (the here-string the script writes to C:\k\join.json).
func (w *capiWorld) joinConfigOf(t *testing.T, name string) *joinconfig.Config {
	t.Helper()
	s, err := w.secret(t, name)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(s.Data[DataKey]), "$joinConfigData = @'\n")
	body, _, ok2 := strings.Cut(rest, "\n'@")
	if !ok || !ok2 {
		t.Fatalf("no join config in the bootstrap data of %s", name)
	}
	cfg, err := joinconfig.Decode(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A Pull Machine deleted before its host joined takes its bootstrap token
// with it: its config holds finalizer TokenFinalizer from before the token
// exists, and when the Machine goes (its config with it, by owner
// reference, as Cluster API's Machine controller deletes it) the token's
// Secret is deleted from the workload cluster, with an event, and so is
// the Node its host registered without Cluster API linking it; the config
// is gone. A config whose Cluster is gone already cannot reach the
// token: it is left to expire, with a Warning event, and the config is not
// held.
func TestPullModeTokenGoesWithTheMachine(t *testing.T) {
	w := newCAPIWorld(t)
	w.startOperatorWith(t, Pull{Version: "v0.5.2"})
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(w.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tokenOf := func(name string) *bootstrapv1.BootstrapTokenStatus {
		cfg := w.waitFor(t, name, "Ready", readyIs(metav1.ConditionTrue, bootstrapv1.ReasonDataSecretAvailable))
		if cfg.Status.BootstrapToken == nil || !slices.Contains(cfg.Finalizers, TokenFinalizer) {
			t.Fatalf("config %s: token %+v, finalizers %v; want a token and %s", name, cfg.Status.BootstrapToken, cfg.Finalizers, TokenFinalizer)
		}
		if _, err := kube.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+cfg.Status.BootstrapToken.ID, metav1.GetOptions{}); err != nil {
			t.Fatalf("config %s's token Secret: %v", name, err)
		}
		return cfg.Status.BootstrapToken
	}
	deleteMachine := func(name string) {
		if err := w.client.Delete(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: name}}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, time.Minute, "config "+name+" gone with its Machine", func() (bool, string) {
			err := w.client.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: name}, &bootstrapv1.WinnodeConfig{})
			return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
		})
	}

	w.cluster(t, "early", false)
	w.machineWithConfig(t, "early", "pull-early", bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePull})
	tok := tokenOf("pull-early")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: w.joinConfigOf(t, "pull-early").NodeName}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteMachine("pull-early")
	if _, err := kube.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+tok.ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted Machine's bootstrap token Secret: %v; want it deleted", err)
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the unlinked Node %s of the deleted Machine: %v; want it deleted", node.Name, err)
	}
	testkit.Eventually(t, time.Minute, "a "+EventReasonTokenDeleted+" event", func() (bool, string) {
		return len(w.events(t, "pull-early", EventReasonTokenDeleted)) > 0, "none yet"
	})

	w.cluster(t, "orphan", false)
	w.machineWithConfig(t, "orphan", "pull-orphan", bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePull})
	tok = tokenOf("pull-orphan")
	if err := w.client.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: "orphan"}}); err != nil {
		t.Fatal(err)
	}
	deleteMachine("pull-orphan")
	if _, err := kube.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+tok.ID, metav1.GetOptions{}); err != nil {
		t.Errorf("the token of a Machine whose Cluster is gone: %v; want it left to expire", err)
	}
	testkit.Eventually(t, time.Minute, "an event saying the token is left to expire", func() (bool, string) {
		notes := w.events(t, "pull-orphan", EventReasonTokenDeleted)
		return len(notes) > 0 && strings.Contains(notes[0], "left to expire"), fmt.Sprintf("events %q", notes)
	})
}
