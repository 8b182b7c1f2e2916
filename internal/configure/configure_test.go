package configure

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// The pure parts of the configuring engine; the steps themselves are
// tested end to end in test/e2e, against the control plane and simulated
// hosts.

func TestUpToDate(t *testing.T) {
	r := &plan.Rendered{Plan: &plan.Plan{Version: "v1-abc", Files: []plan.File{
		{Path: `C:\k\kubelet.exe`, SHA256: "aa"}, {Path: `C:\k\kubelet.yaml`, SHA256: "bb"},
	}}}
	installed := func(version string, complete bool, files map[string]string) *plan.Info {
		return &plan.Info{InstalledPlan: &plan.InstalledPlan{Version: version, Complete: complete, Files: files}}
	}
	all := map[string]string{`C:\k\kubelet.exe`: "aa", `C:\k\kubelet.yaml`: "bb"}
	cases := []struct {
		name string
		info *plan.Info
		want bool
	}{
		{"same plan, all files", installed("v1-abc", true, all), true},
		{"paths compared as Windows does", installed("v1-abc", true, map[string]string{`c:\K\KUBELET.EXE`: "aa", `C:\k\kubelet.yaml`: "bb"}), true},
		{"never configured", &plan.Info{}, false},
		{"other version", installed("v1-def", true, all), false},
		{"apply did not finish", installed("v1-abc", false, all), false},
		{"a file changed on the host", installed("v1-abc", true, map[string]string{`C:\k\kubelet.exe`: "zz", `C:\k\kubelet.yaml`: "bb"}), false},
		{"a file missing", installed("v1-abc", true, map[string]string{`C:\k\kubelet.exe`: "aa"}), false},
	}
	for _, c := range cases {
		if got := upToDate(c.info, r); got != c.want {
			t.Errorf("%s: upToDate = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAgentOutdated(t *testing.T) {
	agent := payload.File{Name: plan.PayloadAgent, HostPath: `C:\k\winnode-agent.exe`, SHA256: "aa", Version: "v1"}
	cases := []struct {
		name string
		info *plan.Info
		want bool
	}{
		{"installed with the payload's hash", &plan.Info{AgentVersion: "v0", InstalledPlan: &plan.InstalledPlan{Files: map[string]string{`C:\K\WINNODE-AGENT.EXE`: "aa"}}}, false},
		{"installed with another hash", &plan.Info{AgentVersion: "v1", InstalledPlan: &plan.InstalledPlan{Files: map[string]string{`C:\k\winnode-agent.exe`: "bb"}}}, true},
		{"no plan yet, same version", &plan.Info{AgentVersion: "v1"}, false},
		{"no plan yet, other version", &plan.Info{AgentVersion: "v0"}, true},
	}
	for _, c := range cases {
		if got := agentOutdated(c.info, agent); got != c.want {
			t.Errorf("%s: agentOutdated = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRedactHidesTokens(t *testing.T) {
	msg := redact(`kubeconfig with token abcdef.0123456789abcdef failed`)
	if strings.Contains(msg, "0123456789abcdef") || !strings.Contains(msg, "abcdef.<redacted>") {
		t.Errorf("redact: %q", msg)
	}
}

func TestHostKeyBlocked(t *testing.T) {
	inst := &winnodev1.WindowsInstance{}
	inst.Status.HostKey = "ssh-ed25519 AAAA"
	if hostKeyBlocked(inst) {
		t.Error("blocked without a mismatch")
	}
	SetCondition(inst, winnodev1.ConditionHostKeyMismatch, metav1.ConditionTrue, winnodev1.ReasonHostKeyChanged, "changed")
	if !hostKeyBlocked(inst) {
		t.Error("not blocked on a mismatch")
	}
	inst.Status.HostKey = "" // the administrator accepts the new key
	if hostKeyBlocked(inst) {
		t.Error("still blocked once the pinned key is cleared")
	}
}

// Configure leaves a blocked instance alone, and says it looked
// (StepBlocked): what tests wait for before checking nothing happened.
func TestConfigureLeavesABlockedInstanceAlone(t *testing.T) {
	inst := &winnodev1.WindowsInstance{}
	inst.Status.HostKey, inst.Status.Phase = "ssh-ed25519 AAAA", winnodev1.PhaseFailed
	SetCondition(inst, winnodev1.ConditionHostKeyMismatch, metav1.ConditionTrue, winnodev1.ReasonHostKeyChanged, "changed")
	before := inst.DeepCopy()
	var steps []string
	c := &Configurer{AfterStep: func(_ *winnodev1.WindowsInstance, step string) { steps = append(steps, step) }}
	res, err := c.Configure(context.Background(), inst)
	if err != nil || res != (Result{}) || !equality.Semantic.DeepEqual(inst, before) {
		t.Errorf("Configure of a blocked instance: %+v, %v; status %+v", res, err, inst.Status)
	}
	if len(steps) != 1 || steps[0] != StepBlocked {
		t.Errorf("AfterStep told %v, want [%s]", steps, StepBlocked)
	}
}

func TestReasonOf(t *testing.T) {
	if got := reasonOf(&host.UnreachableError{Address: "h:22", Err: errors.New("x")}, "Other"); got != winnodev1.ReasonUnreachable {
		t.Errorf("unreachable: %s", got)
	}
	if got := reasonOf(errors.New("x"), "Other"); got != "Other" {
		t.Errorf("other: %s", got)
	}
}

func TestParseKubeletConfigDNS(t *testing.T) {
	ips, domain := parseKubeletConfigDNS("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\n- not-an-ip\nclusterDomain: cluster.example\n")
	if len(ips) != 1 || ips[0] != "10.96.0.10" || domain != "cluster.example" {
		t.Errorf("got %v %q", ips, domain)
	}
	if ips, domain := parseKubeletConfigDNS("clusterDNS: [10.0.0.10]\nclusterDomain: 'bad domain!'"); len(ips) != 1 || domain != "" {
		t.Errorf("bad domain kept: %v %q", ips, domain)
	}
	if ips, _ := parseKubeletConfigDNS(":::"); ips != nil {
		t.Errorf("garbage gave %v", ips)
	}
}

// FuzzParseKubeletConfigDNS: whatever kube-system/kubelet-config holds, the
// result is IP addresses only and a valid domain or none, and nothing panics.
func FuzzParseKubeletConfigDNS(f *testing.F) {
	for _, seed := range []string{
		"clusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n",
		"clusterDNS: [fd00::10, 10.0.0.10]",
		"clusterDNS: 10.96.0.10",
		"clusterDomain: [x]",
		"{",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		ips, domain := parseKubeletConfigDNS(data)
		for _, ip := range ips {
			if net.ParseIP(ip) == nil {
				t.Errorf("%q is not an IP address", ip)
			}
		}
		if domain != "" && len(validation.IsDNS1123Subdomain(domain)) > 0 {
			t.Errorf("domain %q is not a DNS name", domain)
		}
	})
}
