package capibootstrap

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
)

// ValidateSpec checks a WinnodeConfig's spec against the rules the API
// types document, and returns every broken rule, each naming its field
// (spec.computerNamePrefix, spec.firewallPorts[i].port...). The controller
// reports them on the Ready condition (reason InvalidSpec) and as a Warning
// event, and renders nothing until they are fixed.
func ValidateSpec(spec bootstrapv1.WinnodeConfigSpec) field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("spec")
	if m := spec.Mode; m != "" && m != bootstrapv1.ModePull && m != bootstrapv1.ModePush {
		errs = append(errs, field.NotSupported(root.Child("mode"), m, []string{string(bootstrapv1.ModePull), string(bootstrapv1.ModePush)}))
	}
	if p := spec.ComputerNamePrefix; p != "" {
		if err := checkNameChars(p, MaxComputerNamePrefix); err != nil {
			errs = append(errs, field.Invalid(root.Child("computerNamePrefix"), p,
				fmt.Sprintf("a NetBIOS-safe prefix: %v (the computer name is the prefix, a hyphen and 6 hash characters, 15 at most)", err)))
		}
	}
	seen := map[bootstrapv1.FirewallPort]bool{}
	for i, fp := range spec.FirewallPorts {
		path := root.Child("firewallPorts").Index(i)
		if fp.Port < 1 || fp.Port > 65535 {
			errs = append(errs, field.Invalid(path.Child("port"), fp.Port, "must be 1-65535"))
		}
		proto := protocolOf(fp)
		if proto != bootstrapv1.ProtocolTCP && proto != bootstrapv1.ProtocolUDP {
			errs = append(errs, field.NotSupported(path.Child("protocol"), fp.Protocol, []string{string(bootstrapv1.ProtocolTCP), string(bootstrapv1.ProtocolUDP)}))
			continue
		}
		key := bootstrapv1.FirewallPort{Port: fp.Port, Protocol: proto}
		if seen[key] {
			errs = append(errs, field.Duplicate(path, fmt.Sprintf("%s %d", proto, fp.Port)))
		}
		seen[key] = true
	}
	return errs
}

// ModeOf is the spec's mode, Pull (the API's default) when empty.
func ModeOf(spec bootstrapv1.WinnodeConfigSpec) bootstrapv1.Mode {
	if spec.Mode == "" {
		return bootstrapv1.ModePull
	}
	return spec.Mode
}

// ModeOfConfig is the mode cfg's Machine is in: that of the data written
// for it, once written (Push data names the operator's key in
// status.keyFingerprint; Pull data records no key), else the spec's. So a
// config stored before spec.mode existed, which the API server now reads
// with the default, Pull, stays in the Push mode its data was written in.
func ModeOfConfig(cfg *bootstrapv1.WinnodeConfig) bootstrapv1.Mode {
	if cfg.Status.Initialization.DataSecretCreated != nil && *cfg.Status.Initialization.DataSecretCreated {
		if cfg.Status.KeyFingerprint != "" {
			return bootstrapv1.ModePush
		}
		return bootstrapv1.ModePull
	}
	return ModeOf(cfg.Spec)
}

// protocolOf is the port's protocol, TCP when empty.
func protocolOf(fp bootstrapv1.FirewallPort) bootstrapv1.Protocol {
	if fp.Protocol == "" {
		return bootstrapv1.ProtocolTCP
	}
	return fp.Protocol
}

// firewallRules turns a valid spec's ports into the rules the script
// creates, named winnode-<protocol>-<port>.
func firewallRules(ports []bootstrapv1.FirewallPort) []bootstrap.FirewallRule {
	var rules []bootstrap.FirewallRule
	for _, fp := range ports {
		proto := protocolOf(fp)
		rules = append(rules, bootstrap.FirewallRule{
			Name:     fmt.Sprintf("winnode-%s-%d", strings.ToLower(string(proto)), fp.Port),
			Protocol: string(proto),
			Port:     fp.Port,
		})
	}
	return rules
}
