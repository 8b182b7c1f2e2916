package view

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/testkit"
)

// Each stage of a Pull Machine's join, from its WinnodeConfig and Machine.
func TestPullRows(t *testing.T) {
	cfg := func(name string, created time.Duration, f func(*bootstrapv1.WinnodeConfig)) *bootstrapv1.WinnodeConfig {
		c := &bootstrapv1.WinnodeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-windows", Name: name,
			CreationTimestamp: metav1.NewTime(tableNow.Add(-created)), Labels: map[string]string{clusterv1.ClusterNameLabel: "workload-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: name}}},
			Spec: bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePull}}
		f(c)
		return c
	}
	written := func(c *bootstrapv1.WinnodeConfig) {
		c.Status.ComputerName, c.Status.Initialization.DataSecretCreated = "wa-"+c.Name[len(c.Name)-6:], ptr.To(true)
	}
	machine := func(node string, ready bool) *clusterv1.Machine {
		m := &clusterv1.Machine{Status: clusterv1.MachineStatus{NodeRef: clusterv1.MachineNodeReference{Name: node}}}
		if ready {
			m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineNodeReadyCondition, Status: metav1.ConditionTrue}}
		}
		return m
	}
	cases := []struct {
		cfg   *bootstrapv1.WinnodeConfig
		m     *clusterv1.Machine
		stage string
	}{
		{cfg("md-0-waiting", time.Minute, func(c *bootstrapv1.WinnodeConfig) {
			c.Status.Conditions = []metav1.Condition{{Type: bootstrapv1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: bootstrapv1.ReasonBootstrapTokenAuthUnavailable, Message: "Pull mode needs bootstrap-token authentication"}}
		}), nil, StageWaiting},
		{cfg("md-0-issued", time.Minute, func(c *bootstrapv1.WinnodeConfig) {
			c.Status.BootstrapToken = &bootstrapv1.BootstrapTokenStatus{ID: "abcdef"}
		}), nil, StageCredentialIssued},
		{cfg("md-0-writtn", 2*time.Minute, written), &clusterv1.Machine{}, StageDataWritten},
		{cfg("md-0-late01", time.Hour, func(c *bootstrapv1.WinnodeConfig) {
			written(c)
			c.Status.Conditions = []metav1.Condition{{Type: bootstrapv1.ConditionNodeJoined, Status: metav1.ConditionFalse,
				Reason: bootstrapv1.ReasonNodeJoinTimedOut, Message: `no nodeRef after 30m0s; read C:\var\log\winnode-agent\join.log`}}
		}), &clusterv1.Machine{}, StageJoinTimedOut},
		{cfg("md-0-nodeup", 5*time.Minute, written), machine("wa-nodeup", false), StageNodeRegistered},
		{cfg("md-0-ready1", 9*time.Minute, written), machine("wa-ready1", true), StageReady},
	}
	var rows []PullRow
	for _, c := range cases {
		r := NewPullRow(c.cfg, c.m)
		if r.Stage != c.stage {
			t.Errorf("%s: stage %s, want %s", c.cfg.Name, r.Stage, c.stage)
		}
		rows = append(rows, r)
	}
	var b bytes.Buffer
	if err := WritePullTable(&b, rows, tableNow); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "pull.golden", b.String())
}
