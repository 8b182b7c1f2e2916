package configure

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// The node name follows the host's report until a credential is issued
// for it; from then on (or when winnode assigned it) another report is
// NodeNameChanged, and the name stays.
func TestCheckReportedName(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	capi := builder.Instance("capi").Build()
	capi.Spec.NodeName = "winnode-md-0-ab"
	for _, c := range []struct {
		name     string
		inst     *winnodev1.WindowsInstance
		hostname string
		want     string // the node name afterwards
		changed  bool
	}{
		{"first report", builder.Instance("a").Build(), "WIN-A", "win-a", false},
		{"renamed before any credential", builder.Instance("a").Node("win-a", "").Build(), "WIN-B", "win-b", false},
		{"renamed after the first credential", builder.Instance("a").Node("win-a", "").NameFixed(t0).Build(), "WIN-B", "win-a", true},
		{"renamed after its Node registered", builder.Instance("a").Node("win-a", "uid-1").Build(), "WIN-B", "win-a", true},
		{"renamed after its certificate was approved", builder.Instance("a").Node("win-a", "").ClientCertificate("csr-1", "win-a", false).Build(), "WIN-B", "win-a", true},
		{"the same name again, in other case", builder.Instance("a").Node("win-a", "").NameFixed(t0).Build(), "Win-A", "win-a", false},
		{"the computer name winnode assigned", capi, "WINNODE-MD-0-AB", "winnode-md-0-ab", false},
		{"another name than the one winnode assigned", capi, "WIN-EVIL", "winnode-md-0-ab", true},
	} {
		inst := c.inst.DeepCopy()
		err := (&Configurer{}).checkReportedName(inst, c.hostname)
		var se *StepError
		switch {
		case inst.Status.NodeName != c.want:
			t.Errorf("%s: node name %q, want %q", c.name, inst.Status.NodeName, c.want)
		case c.changed && (!errors.As(err, &se) || se.Reason != winnodev1.ReasonNodeNameChanged || !meta.IsStatusConditionTrue(inst.Status.Conditions, winnodev1.ConditionNodeNameChanged)):
			t.Errorf("%s: %v, conditions %v; want NodeNameChanged", c.name, err, inst.Status.Conditions)
		case !c.changed && (err != nil || meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionNodeNameChanged) != nil):
			t.Errorf("%s: %v; want the name accepted", c.name, err)
		}
	}
}

// A Node is an instance's only by its recorded UID or by proof (the
// approver approved its client certificate for that name while no Node of
// that name existed); a Node created after the credential is not proof.
func TestIsOurNode(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	joined := metav1.NewTime(t0)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-a", UID: types.UID("uid-1"), CreationTimestamp: metav1.NewTime(t0.Add(time.Hour))}}
	legacy := builder.Instance("legacy").Node("win-a", "").Build()
	legacy.Status.JoinedAt = &joined
	legacyFixed := legacy.DeepCopy()
	legacyFixed.Status.NodeNameFixedAt = &joined
	for _, c := range []struct {
		name   string
		inst   *winnodev1.WindowsInstance
		ours   bool
		record bool // the UID is recorded now
	}{
		{"its recorded UID", builder.Instance("a").Node("win-a", "uid-1").Build(), true, false},
		{"another UID recorded", builder.Instance("a").Node("win-a", "uid-0").Build(), false, false},
		{"approved while no Node existed", builder.Instance("a").Node("win-a", "").ClientCertificate("csr-1", "win-a", false).Build(), true, true},
		{"approved while a Node existed", builder.Instance("a").Node("win-a", "").ClientCertificate("csr-1", "win-a", true).Build(), false, false},
		{"approved for another name", builder.Instance("a").Node("win-a", "").ClientCertificate("csr-1", "win-b", false).Build(), false, false},
		{"a credential issued, nothing approved", builder.Instance("a").Node("win-a", "").NameFixed(t0).BootstrapToken("abcdef").Build(), false, false},
		{"Ready before names were fixed", legacy, true, true},
		{"joined under this release without proof", legacyFixed, false, false},
	} {
		inst := c.inst.DeepCopy()
		before := inst.Status.NodeUID
		got := (&Configurer{}).isOurNode(inst, node)
		if got != c.ours {
			t.Errorf("%s: ours %v, want %v", c.name, got, c.ours)
		}
		if recorded := before == "" && inst.Status.NodeUID == "uid-1"; recorded != c.record {
			t.Errorf("%s: node UID %q recorded %v, want %v", c.name, inst.Status.NodeUID, recorded, c.record)
		}
	}
}
