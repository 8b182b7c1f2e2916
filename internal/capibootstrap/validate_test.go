package capibootstrap

import (
	"k8s.io/utils/ptr"
	"strings"
	"testing"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
)

func TestValidateSpec(t *testing.T) {
	good := bootstrapv1.WinnodeConfigSpec{
		Mode:               bootstrapv1.ModePush,
		ComputerNamePrefix: "web01",
		FirewallPorts:      []bootstrapv1.FirewallPort{{Port: 80}, {Port: 4789, Protocol: "UDP"}, {Port: 4789, Protocol: "TCP"}},
	}
	if errs := ValidateSpec(good); len(errs) > 0 {
		t.Fatalf("a valid spec refused: %v", errs)
	}
	for _, tc := range []struct {
		spec bootstrapv1.WinnodeConfigSpec
		want string
	}{
		{bootstrapv1.WinnodeConfigSpec{Mode: "pull"}, `spec.mode: Unsupported value: "pull": supported values: "Pull", "Push"`},
		{bootstrapv1.WinnodeConfigSpec{ComputerNamePrefix: "web_01"}, `spec.computerNamePrefix: Invalid value: "web_01"`},
		{bootstrapv1.WinnodeConfigSpec{ComputerNamePrefix: "toolongprefix"}, "must be 1 to 8 characters"},
		{bootstrapv1.WinnodeConfigSpec{ComputerNamePrefix: "web-"}, "must not start or end with a hyphen"},
		{bootstrapv1.WinnodeConfigSpec{FirewallPorts: []bootstrapv1.FirewallPort{{Port: 0}}}, "spec.firewallPorts[0].port: Invalid value: 0: must be 1-65535"},
		{bootstrapv1.WinnodeConfigSpec{FirewallPorts: []bootstrapv1.FirewallPort{{Port: 70000}}}, "spec.firewallPorts[0].port"},
		{bootstrapv1.WinnodeConfigSpec{FirewallPorts: []bootstrapv1.FirewallPort{{Port: 80, Protocol: "SCTP"}}}, `spec.firewallPorts[0].protocol: Unsupported value: "SCTP"`},
		{bootstrapv1.WinnodeConfigSpec{FirewallPorts: []bootstrapv1.FirewallPort{{Port: 80}, {Port: 80, Protocol: "TCP"}}}, "spec.firewallPorts[1]: Duplicate value"},
	} {
		errs := ValidateSpec(tc.spec)
		if len(errs) == 0 {
			t.Errorf("%+v accepted", tc.spec)
			continue
		}
		if got := errs.ToAggregate().Error(); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: error %q does not say %q", tc.spec, got, tc.want)
		}
	}
}

func TestFirewallRules(t *testing.T) {
	rules := firewallRules([]bootstrapv1.FirewallPort{{Port: 80}, {Port: 4789, Protocol: "UDP"}})
	if len(rules) != 2 || rules[0].Name != "winnode-tcp-80" || rules[0].Protocol != "TCP" || rules[1].Name != "winnode-udp-4789" || rules[1].Protocol != "UDP" {
		t.Errorf("rules = %+v", rules)
	}
}

// An empty mode is Pull, the API's default.
func TestModeOf(t *testing.T) {
	for in, want := range map[bootstrapv1.Mode]bootstrapv1.Mode{"": bootstrapv1.ModePull, "Pull": bootstrapv1.ModePull, "Push": bootstrapv1.ModePush} {
		if got := ModeOf(bootstrapv1.WinnodeConfigSpec{Mode: in}); got != want {
			t.Errorf("ModeOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// Once the data is written, its mode is the Machine's, whatever the spec
// says now (a config stored before spec.mode existed reads as Pull).
func TestModeOfConfig(t *testing.T) {
	written := func(spec bootstrapv1.Mode, fingerprint string) *bootstrapv1.WinnodeConfig {
		c := &bootstrapv1.WinnodeConfig{Spec: bootstrapv1.WinnodeConfigSpec{Mode: spec}}
		c.Status.Initialization.DataSecretCreated = ptr.To(true)
		c.Status.KeyFingerprint = fingerprint
		return c
	}
	for _, tc := range []struct {
		cfg  *bootstrapv1.WinnodeConfig
		want bootstrapv1.Mode
	}{
		{&bootstrapv1.WinnodeConfig{}, bootstrapv1.ModePull},
		{&bootstrapv1.WinnodeConfig{Spec: bootstrapv1.WinnodeConfigSpec{Mode: bootstrapv1.ModePush}}, bootstrapv1.ModePush},
		{written(bootstrapv1.ModePull, "SHA256:abc"), bootstrapv1.ModePush},
		{written(bootstrapv1.ModePush, ""), bootstrapv1.ModePull},
		{written(bootstrapv1.ModePull, ""), bootstrapv1.ModePull},
	} {
		if got := ModeOfConfig(tc.cfg); got != tc.want {
			t.Errorf("ModeOfConfig(spec %q, status %+v) = %q, want %q", tc.cfg.Spec.Mode, tc.cfg.Status, got, tc.want)
		}
	}
}
