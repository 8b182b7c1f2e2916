// Package preflight decides the pre-flight checks of issue 28: what is
// wrong with a Windows host before winnode sends it anything, each as
// pass, warn or fail with a message that names the fix. The functions are
// pure: the agent gathers the host's side (internal/agent preflight.go),
// the operator its own (internal/configure preflight.go), and both decide
// here. docs/troubleshooting.md maps each check to its fix.
package preflight

import (
	"fmt"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// The checks, by the names results, the annotation
// winnode.io/skip-preflight and the operator's --skip-preflight use.
const (
	WindowsBuild      = "windows-build"
	ContainersFeature = "containers-feature"
	Disk              = "disk"
	Clock             = "clock"
	NodeName          = "node-name"
	DNS               = "dns"
	APIServer         = "api-server"
	ContainerRuntime  = "container-runtime"
	Defender          = "defender"
	Addressing        = "addressing"
	// KubeletPort runs after the configuration, from the operator
	// through the API server (kubeletport.go); it never blocks.
	KubeletPort = "kubelet-port"
)

// Names are the checks in the order they are reported.
var Names = []string{WindowsBuild, ContainersFeature, Disk, Clock, NodeName, DNS, APIServer, ContainerRuntime, Defender, Addressing, KubeletPort}

// Known says whether name is a check's name.
func Known(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// Reason is the condition reason a failing check gives (a condition reason
// is CamelCase): the check's name in CamelCase, except the container
// runtime's, which keeps the reason of issue 26's refusal.
func Reason(check string) string {
	if check == ContainerRuntime {
		return "ContainerRuntimeConflict"
	}
	var b strings.Builder
	for _, part := range strings.Split(check, "-") {
		switch part {
		case "api", "dns":
			b.WriteString(strings.ToUpper(part))
		default:
			if part != "" {
				b.WriteString(strings.ToUpper(part[:1]) + part[1:])
			}
		}
	}
	return b.String()
}

func pass(check, format string, args ...any) plan.PreflightResult {
	return plan.PreflightResult{Check: check, Result: plan.PreflightPass, Message: fmt.Sprintf(format, args...)}
}

func warn(check, format string, args ...any) plan.PreflightResult {
	return plan.PreflightResult{Check: check, Result: plan.PreflightWarn, Message: fmt.Sprintf(format, args...)}
}

func fail(check, format string, args ...any) plan.PreflightResult {
	return plan.PreflightResult{Check: check, Result: plan.PreflightFail, Message: fmt.Sprintf(format, args...)}
}

// CannotRun is the warning of a check that could not run (a command
// missing, a timeout): it names the check and why, and blocks nothing.
func CannotRun(check string, err error) plan.PreflightResult {
	return warn(check, "the %s check could not run (%v); winnode goes on without it", check, err)
}

// FirstFailure is the first failing result, if any.
func FirstFailure(results []plan.PreflightResult) (plan.PreflightResult, bool) {
	for _, r := range results {
		if r.Result == plan.PreflightFail {
			return r, true
		}
	}
	return plan.PreflightResult{}, false
}

// ParseSkip reads a list of check names ("clock,dns", spaces allowed),
// returning the known ones and, apart, the names that are no check's.
func ParseSkip(list string) (skip, unknown []string) {
	for _, n := range strings.Split(list, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch {
		case n == "":
		case Known(n):
			skip = append(skip, n)
		default:
			unknown = append(unknown, n)
		}
	}
	return skip, unknown
}

// Skip leaves out the results of the skipped checks, and returns the
// names of those it left out, in the order of Names.
func Skip(results []plan.PreflightResult, skip []string) (kept []plan.PreflightResult, skipped []string) {
	for _, r := range results {
		if contains(skip, r.Check) {
			if !contains(skipped, r.Check) {
				skipped = append(skipped, r.Check)
			}
			continue
		}
		kept = append(kept, r)
	}
	return kept, skipped
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Sort orders results as Names does (the host's first, then the
// operator's would otherwise interleave by who ran them).
func Sort(results []plan.PreflightResult) []plan.PreflightResult {
	out := make([]plan.PreflightResult, 0, len(results))
	for _, n := range Names {
		for _, r := range results {
			if r.Check == n {
				out = append(out, r)
			}
		}
	}
	for _, r := range results {
		if !Known(r.Check) {
			out = append(out, r)
		}
	}
	return out
}

// HostChecks are the checks the agent decides on the host; the others are
// the operator's.
var HostChecks = []string{WindowsBuild, ContainersFeature, Disk, APIServer, Defender, Addressing}

// FromHost keeps of what an agent reported the results of host checks
// with a known outcome, once each: a host (or whoever answers for it)
// cannot add a check, report one of the operator's, or write a result the
// status does not allow. What it leaves out is reported in dropped.
func FromHost(results []plan.PreflightResult) (kept []plan.PreflightResult, dropped int) {
	seen := map[string]bool{}
	for _, r := range results {
		switch {
		case !contains(HostChecks, r.Check), seen[r.Check],
			r.Result != plan.PreflightPass && r.Result != plan.PreflightWarn && r.Result != plan.PreflightFail:
			dropped++
			continue
		}
		seen[r.Check] = true
		kept = append(kept, r)
	}
	return kept, dropped
}
