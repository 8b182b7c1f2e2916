package view

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

var tableNow = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)

func testNode(name, ip string, ready corev1.ConditionStatus, created time.Duration) *builder.NodeBuilder {
	return builder.Node(name).Created(tableNow.Add(-created)).Ready(ready).
		Address(corev1.NodeHostName, name).Address(corev1.NodeInternalIP, ip).
		Info("Windows Server 2022 Datacenter", "v1.37.1")
}

func TestNodeTableGolden(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("win-c", "127.0.0.12", corev1.ConditionFalse, 3*time.Hour).Build(),
		testNode("win-b", "127.0.0.11", corev1.ConditionTrue, 90*time.Second).Unschedulable().Build(),
		testNode("win-a", "127.0.0.10", corev1.ConditionTrue, 26*time.Hour).Build(),
		builder.Node("win-d").Build(), // nothing reported yet
	}
	var rows []NodeRow
	for _, n := range nodes {
		rows = append(rows, NewNodeRow(n))
	}
	var b bytes.Buffer
	if err := WriteNodeTable(&b, rows, tableNow); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "nodes.golden", b.String())
}

func TestInstanceTableGolden(t *testing.T) {
	inst := func(name, addr string, port int32, phase winnodev1.Phase, step, node, lastErr string, created time.Duration) *winnodev1.WindowsInstance {
		return builder.Instance(name).Created(tableNow.Add(-created)).Host(addr, "Administrator").Port(port).
			Source(winnodev1.SourceRef{Kind: winnodev1.SourceConfigMap, Name: "windows-instances", Namespace: "winnode-system", Key: addr}).
			Phase(phase).Step(step).Node(node, "").LastError(lastErr).Version("v0.1.0").Build()
	}
	// preflight gives an instance pre-flight results and their condition.
	preflight := func(inst *winnodev1.WindowsInstance, status metav1.ConditionStatus, results ...winnodev1.PreflightResult) *winnodev1.WindowsInstance {
		inst.Status.Preflight = results
		inst.Status.Conditions = append(inst.Status.Conditions, metav1.Condition{Type: winnodev1.ConditionPreflight, Status: status, Reason: "X"})
		return inst
	}
	rows := []InstanceRow{
		NewInstanceRow(preflight(inst("10.0.0.7", "10.0.0.7", 22, winnodev1.PhaseReady, "", "win-a", "", 2*time.Hour), metav1.ConditionTrue,
			winnodev1.PreflightResult{Check: "clock", Result: "pass"}, winnodev1.PreflightResult{Check: "dns", Result: "warn"}, winnodev1.PreflightResult{Check: "addressing", Result: "warn"}),
			testNode("win-a", "10.0.0.7", corev1.ConditionTrue, time.Hour).Build()),
		NewInstanceRow(preflight(inst("10.0.0.8", "10.0.0.8", 2222, winnodev1.PhaseConfiguring, "sync", "win-b", "", 5*time.Minute), metav1.ConditionTrue,
			winnodev1.PreflightResult{Check: "clock", Result: "pass"}), nil),
		NewInstanceRow(inst("bad.example.com", "bad.example.com", 0, winnodev1.PhaseFailed, "connect", "",
			"connecting to bad.example.com:22: dial tcp: lookup bad.example.com: no such host;\ncheck the address in ConfigMap windows-instances", 40*time.Second), nil),
		NewInstanceRow(preflight(inst("skewed", "10.0.0.10", 22, winnodev1.PhaseFailed, "info", "win-c", "pre-flight check clock failed", time.Minute), metav1.ConditionFalse,
			winnodev1.PreflightResult{Check: "clock", Result: "fail"}, winnodev1.PreflightResult{Check: "dns", Result: "warn"}), nil),
		NewInstanceRow(builder.Instance("fresh").Created(tableNow).Host("10.0.0.9", "Administrator").Build(), nil),
	}
	var b bytes.Buffer
	if err := WriteInstanceTable(&b, rows, tableNow); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "instances.golden", b.String())

	// What `winnodectl status -o json` prints of them.
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Instances []InstanceRow `json:"instances"`
	}{rows}); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "instances.json.golden", j.String())
}

func TestCell(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"", 0, "-"},
		{"  a\tb\nc ", 0, "a b c"},
		{"abcdef", 4, "abc…"},
		{"abcd", 4, "abcd"},
		{"ééééé", 3, "éé…"},
	} {
		if got := cell(tc.in, tc.max); got != tc.want {
			t.Errorf("cell(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
