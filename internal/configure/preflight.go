package configure

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/hosttext"
	"github.com/winnode/winnode/internal/identity"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/preflight"
)

// Pre-flight checks (issue 28; docs/troubleshooting.md). The host's run
// inside the agent's info (`info --preflight`, the same exec as ever: no
// extra round trip), handed the cluster's API endpoint and CA; the
// operator adds its own (clock, node name, DNS, container runtime), drops
// the skipped ones, and records them all as status.preflight and condition
// Preflight. A failure stops a configuration or an upgrade before
// anything of the payload is sent (preflightGate); a warning does not. The
// node-name and container-runtime refusals of issues 25 and 26 stand
// whether or not their pre-flight reports are skipped: skipping leaves a
// report out, never a security rule.

// EventReasonPreflightSkipUnknown is the Warning event of a name in
// winnode.io/skip-preflight that is no check's.
const EventReasonPreflightSkipUnknown = "PreflightSkipUnknown"

// dnsTimeout bounds the DNS check's lookup.
const dnsTimeout = 3 * time.Second

// preflightRequest is what the agent's checks need from the cluster: the
// API endpoint and CA the host's kubelet will use (when they cannot be
// read, the api-server check says it could not run), and the limits.
func (c *Configurer) preflightRequest(ctx context.Context, inst *winnodev1.WindowsInstance) *plan.PreflightRequest {
	req := &plan.PreflightRequest{MinFreeGiB: c.MinFreeDiskGiB, Address: inst.Spec.Address}
	if _, err := netip.ParseAddr(inst.Spec.Address); err == nil {
		req.ListedByIP = true
	}
	if _, facts, _, err := c.clusterFacts(ctx); err == nil {
		req.APIServer, req.CAData = facts.Server, facts.CAData
	} else {
		c.Log.Info("the API server check cannot run: the cluster facts do not read", "instance", inst.Name, "error", err.Error())
	}
	return req
}

// recordPreflight adds the operator's checks to the host's, leaves out
// the skipped ones, and records the results (status.preflight, condition
// Preflight).
func (c *Configurer) recordPreflight(ctx context.Context, inst *winnodev1.WindowsInstance, info *plan.Info) {
	results := append(c.hostPreflight(inst, info), c.operatorPreflight(ctx, inst, info)...)
	// The kubelet-port result stays until its check runs again, after
	// the configuration (kubeletport.go).
	for _, r := range inst.Status.Preflight {
		if r.Check == preflight.KubeletPort {
			results = append(results, plan.PreflightResult{Check: r.Check, Result: plan.PreflightOutcome(r.Result), Message: r.Message})
		}
	}
	c.setPreflight(inst, results, c.skippedChecks(inst))
}

// setPreflight records results, less the skipped checks, as
// status.preflight and condition Preflight: False with the first failure,
// else True with the warnings named. The message names every skipped
// check.
func (c *Configurer) setPreflight(inst *winnodev1.WindowsInstance, results []plan.PreflightResult, skip []string) {
	kept, _ := preflight.Skip(preflight.Sort(results), skip)
	inst.Status.Preflight = inst.Status.Preflight[:0]
	for _, r := range kept {
		inst.Status.Preflight = append(inst.Status.Preflight, winnodev1.PreflightResult{
			Check: truncate(hosttext.Clean(r.Check), 32), Result: string(r.Result), Message: truncate(hosttext.Clean(r.Message), 1000),
		})
	}
	if len(inst.Status.Preflight) == 0 {
		inst.Status.Preflight = nil
	}
	skippedNote := ""
	if skipped := preflight.Sort(namesOnly(skip)); len(skipped) > 0 {
		skippedNote = fmt.Sprintf(" (skipped: %s)", strings.Join(checkNames(skipped), ", "))
	}
	if f, failed := preflight.FirstFailure(kept); failed {
		SetCondition(inst, winnodev1.ConditionPreflight, metav1.ConditionFalse, preflight.Reason(f.Check),
			fmt.Sprintf("pre-flight check %s failed: %s%s", f.Check, f.Message, skippedNote))
		return
	}
	var warnings []string
	for _, r := range kept {
		if r.Result == plan.PreflightWarn {
			warnings = append(warnings, r.Check)
		}
	}
	if len(warnings) > 0 {
		SetCondition(inst, winnodev1.ConditionPreflight, metav1.ConditionTrue, winnodev1.ReasonPreflightWarnings,
			fmt.Sprintf("pre-flight checks passed with warnings: %s (status.preflight says why)%s", strings.Join(warnings, ", "), skippedNote))
		return
	}
	SetCondition(inst, winnodev1.ConditionPreflight, metav1.ConditionTrue, winnodev1.ReasonPreflightPassed, "pre-flight checks passed"+skippedNote)
}

// namesOnly turns skipped check names into results, for preflight.Sort to
// order them (once each) as the checks are reported.
func namesOnly(names []string) []plan.PreflightResult {
	var out []plan.PreflightResult
	for _, n := range names {
		if !slices.ContainsFunc(out, func(r plan.PreflightResult) bool { return r.Check == n }) {
			out = append(out, plan.PreflightResult{Check: n})
		}
	}
	return out
}

func checkNames(results []plan.PreflightResult) []string {
	out := make([]string, len(results))
	for i, r := range results {
		out[i] = r.Check
	}
	return out
}

// hostPreflight is what the agent reported, as preflight.FromHost keeps
// it (an answer that is not the agent's own is logged, not kept).
func (c *Configurer) hostPreflight(inst *winnodev1.WindowsInstance, info *plan.Info) []plan.PreflightResult {
	kept, dropped := preflight.FromHost(info.Preflight)
	if dropped > 0 {
		c.Log.Info("the agent reported pre-flight results that are no host check's, or twice; they are left out", "instance", inst.Name, "count", dropped)
	}
	return kept
}

// preflightGate stops a configuration or an upgrade whose pre-flight
// checks failed, before anything of the payload is sent. The node-name and
// container-runtime checks only report: their refusals are issue 25's and
// 26's own (NodeNameNotAllowed, NodeNameConflict, ContainerRuntimeConflict,
// with their conditions), made in the same pass whether the report is
// skipped or not.
func preflightGate(inst *winnodev1.WindowsInstance) error {
	for _, r := range inst.Status.Preflight {
		if r.Result != string(plan.PreflightFail) || r.Check == preflight.NodeName || r.Check == preflight.ContainerRuntime {
			continue
		}
		return stepErr(StepInfo, preflight.Reason(r.Check), fmt.Errorf("host %s: pre-flight check %s failed: %s; winnode sends nothing until it passes (fix it on the host, or skip the check: annotation %s)",
			inst.Spec.Address, r.Check, r.Message, winnodev1.AnnotationSkipPreflight))
	}
	return nil
}

// skippedChecks are the operator's --skip-preflight and the instance's
// annotation; an unknown name in the annotation is a Warning event.
func (c *Configurer) skippedChecks(inst *winnodev1.WindowsInstance) []string {
	skip, unknown := c.skipList(inst)
	if len(unknown) > 0 {
		c.event(inst, corev1.EventTypeWarning, EventReasonPreflightSkipUnknown, "annotation %s names %s, which is no pre-flight check (the checks: %s); it is ignored",
			winnodev1.AnnotationSkipPreflight, strings.Join(unknown, ", "), strings.Join(preflight.Names, ", "))
	}
	return skip
}

// skipList is skippedChecks without the event: the known names, and apart
// the annotation's unknown ones.
func (c *Configurer) skipList(inst *winnodev1.WindowsInstance) (skip, unknown []string) {
	skip = slices.Clone(c.SkipPreflight)
	if list, ok := inst.Annotations[winnodev1.AnnotationSkipPreflight]; ok {
		names, bad := preflight.ParseSkip(list)
		skip, unknown = append(skip, names...), bad
	}
	return skip, unknown
}

// operatorPreflight runs the checks the operator decides: the host's clock
// against its own, the node name against issue 25's rules, the node name's
// DNS, and the container runtime against the instance's mode (issue 26).
func (c *Configurer) operatorPreflight(ctx context.Context, inst *winnodev1.WindowsInstance, info *plan.Info) []plan.PreflightResult {
	var out []plan.PreflightResult
	if info.System == nil {
		out = append(out, preflight.CheckClock(time.Time{}, time.Now()))
	} else {
		out = append(out, preflight.CheckClock(info.System.Clock, time.Now()))
	}
	name := plan.NodeName(info.Hostname)
	if inst.Spec.NodeName != "" {
		name = strings.ToLower(inst.Spec.NodeName)
	}
	out = append(out, preflight.CheckNodeName(name, c.nodeNameRefusal(ctx, inst, name)))
	out = append(out, c.dnsCheck(ctx, inst, name, info))
	out = append(out, preflight.CheckContainerRuntime(info.Containerd, c.runtimeMode(inst)))
	return out
}

// nodeNameRefusal applies identity.CheckNodeName and the claims of other
// instances as nodename.go does, without its conditions and events (those
// come when the name is used). Another Node of the name counts only while
// the instance has no record that could make that Node its own (a client
// certificate approved for it, or a Ready instance from before names were
// fixed): then getNode decides, by proof.
func (c *Configurer) nodeNameRefusal(ctx context.Context, inst *winnodev1.WindowsInstance, name string) error {
	apiNames, err := c.apiServerNames(ctx)
	if err != nil {
		return fmt.Errorf("the names of the API server's certificate do not read (%v)", err)
	}
	facts := identity.NameFacts{APIServerNames: apiNames, OwnUID: inst.Status.NodeUID}
	if inst.Status.ClientCertificate == nil && !readyBeforeNamesWereFixed(inst) {
		facts.NodeUID = func(n string) (string, bool) {
			node, err := FindNode(ctx, c.Kube, n, "")
			if err != nil || node == nil {
				return "", false
			}
			return string(node.UID), true
		}
	}
	if err := identity.CheckNodeName(name, facts); err != nil {
		return err
	}
	probe := inst.DeepCopy()
	probe.Status.NodeName = name
	others, err := c.peers(ctx, identity.NodeNameKey(probe.Spec.Cluster, identity.NodeNameOf(probe)))
	if err != nil {
		return fmt.Errorf("the other WindowsInstances do not list (%v)", err)
	}
	if owner := identity.NodeNameOwner(probe, others); owner != "" {
		return fmt.Errorf("node name %s is already the node name of WindowsInstance %s", name, owner)
	}
	return nil
}

// dnsCheck resolves the node name from the operator.
func (c *Configurer) dnsCheck(ctx context.Context, inst *winnodev1.WindowsInstance, name string, info *plan.Info) plan.PreflightResult {
	lookup := c.LookupHost
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	ctx, cancel := context.WithTimeout(ctx, dnsTimeout)
	defer cancel()
	addrs, err := lookup(ctx, name)
	hostAddrs := slices.Clone(info.IPv4)
	if ip, perr := netip.ParseAddr(inst.Spec.Address); perr == nil {
		hostAddrs = append(hostAddrs, ip.String())
	}
	return preflight.CheckDNS(name, addrs, err, hostAddrs)
}
