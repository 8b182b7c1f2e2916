package configure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/hosttext"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// agentFile is the payload's agent.
func (c *Configurer) agentFile() (payload.File, error) {
	if c.Payload == nil {
		return payload.File{}, errors.New("no payload loaded (operator flag --payload-dir)")
	}
	f, ok := c.Payload.Lookup(plan.PayloadAgent)
	if !ok {
		return payload.File{}, fmt.Errorf("the payload in %s has no %s: rebuild it with `make payload`", c.PayloadDir, plan.PayloadAgent)
	}
	return f, nil
}

// facts learns the host: `winnode-agent.exe info`, after putting the agent
// on the host when it is missing (first contact) or not the payload's
// (installed then reports true; see agentInfo). It records the host's names and addresses
// in the status, and refuses a host whose container runtime does not fit
// the instance's mode (runtime.go).
func (c *Configurer) facts(ctx context.Context, inst *winnodev1.WindowsInstance, cl *host.Client) (info *plan.Info, installed bool, err error) {
	agent, err := c.agentFile()
	if err != nil {
		return nil, false, stepErr(StepInfo, winnodev1.ReasonSyncFailed, err)
	}
	info, installed, err = c.agentInfo(ctx, inst, cl, agent, c.preflightRequest(ctx, inst))
	if err != nil {
		return nil, false, stepErr(StepInfo, reasonOf(err, winnodev1.ReasonApplyFailed), fmt.Errorf("learning the host's facts: %w", err))
	}
	if info.RebootPending && rebooting(inst) {
		return nil, false, errRebooting // winnode's restart has not happened yet (reboot.go)
	}
	c.agentWarnings(inst, info.Warnings)
	if err := checkReport(info); err != nil {
		return nil, false, stepErr(StepInfo, winnodev1.ReasonApplyFailed, fmt.Errorf("host %s: %w; winnode keeps nothing of this answer", inst.Spec.Address, err))
	}
	inst.Status.Hostname = info.Hostname
	inst.Status.FQDN = info.FQDN
	inst.Status.Addresses = append([]string(nil), info.IPv4...)
	inst.Status.OSBuild = info.OS.Build
	c.recordPreflight(ctx, inst, info) // preflightGate acts on it (preflight.go)
	if err := c.checkReportedName(inst, info.Hostname); err != nil {
		return nil, false, err
	}

	if err := c.checkContainerRuntime(inst, info); err != nil {
		return nil, false, err
	}
	return info, installed, nil
}

// checkReport checks what the agent reported of the host against what
// Windows and DNS allow, before any of it is kept (the status fields have
// the same limits): a hostname is one DNS label, an FQDN a DNS name of at
// most 253 characters, at most MaxAddresses IPv4 addresses, an OS build of
// digits and dots. What is quoted of a bad answer is cleaned and cut.
func checkReport(info *plan.Info) error {
	quote := func(s string) string { return strconv.Quote(truncate(hosttext.Clean(s), 80)) }
	if errs := validation.IsDNS1123Label(strings.ToLower(info.Hostname)); len(errs) > 0 {
		return fmt.Errorf("the agent reported the hostname %s, which is not one DNS label of at most %d characters (%s)", quote(info.Hostname), winnodev1.MaxHostnameLength, strings.Join(errs, "; "))
	}
	if f := strings.TrimSuffix(info.FQDN, "."); f != "" && len(validation.IsDNS1123Subdomain(strings.ToLower(f))) > 0 {
		return fmt.Errorf("the agent reported the FQDN %s, which is not a DNS name of at most %d characters", quote(info.FQDN), winnodev1.MaxFQDNLength)
	}
	if len(info.IPv4) > winnodev1.MaxAddresses {
		return fmt.Errorf("the agent reported %d IPv4 addresses, more than the %d winnode keeps", len(info.IPv4), winnodev1.MaxAddresses)
	}
	for _, a := range info.IPv4 {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Is4() {
			return fmt.Errorf("the agent reported the address %s, which is not an IPv4 address", quote(a))
		}
	}
	if !osBuildRe.MatchString(info.OS.Build) {
		return fmt.Errorf("the agent reported the OS build %s, which is not a Windows build number such as 10.0.20348", quote(info.OS.Build))
	}
	return nil
}

// osBuildRe is a Windows build as the agent reports it (10.0.20348), or
// none.
var osBuildRe = regexp.MustCompile(`\A([0-9]{1,5}(\.[0-9]{1,6}){0,3})?\z`)

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// runInfo runs `info`, with the pre-flight checks of req when it is set.
func (c *Configurer) runInfo(ctx context.Context, cl *host.Client, agentPath string, req *plan.PreflightRequest) (*plan.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, c.agentTimeout())
	defer cancel()
	var info plan.Info
	args, stdin := preflightArgs([]string{"info"}, req)
	if err := cl.RunAgent(ctx, agentPath, args, stdin, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// preflightArgs adds --preflight to an agent command, and its request as
// standard input, when req is set.
func preflightArgs(args []string, req *plan.PreflightRequest) ([]string, io.Reader) {
	if req == nil {
		return args, nil
	}
	body, _ := json.Marshal(req) // plain data: cannot fail
	return append(args, "--preflight"), bytes.NewReader(body)
}

// agentOutdated says whether the agent on the host is not the payload's:
// the installed plan records its hash; before any plan was applied, its
// version tells.
func agentOutdated(info *plan.Info, agent payload.File) bool {
	if info.InstalledPlan != nil {
		for path, sum := range info.InstalledPlan.Files {
			if strings.EqualFold(path, agent.HostPath) {
				return sum != agent.SHA256
			}
		}
	}
	return info.AgentVersion != agent.Version
}

func (c *Configurer) countUpload(n int64) {
	if n > 0 && c.Uploaded != nil {
		c.Uploaded(n)
	}
}

// reasonOf maps a host error to a condition reason, whatever the step: a
// lost connection is Unreachable, a transfer below the minimum rate
// SlowHost, an answer larger than the operator reads AnswerTooLarge.
func reasonOf(err error, def string) string {
	var (
		unreachable *host.UnreachableError
		slow        *host.SlowTransferError
		tooLarge    *host.OutputTooLargeError
	)
	switch {
	case errors.As(err, &slow):
		return winnodev1.ReasonSlowHost
	case errors.As(err, &tooLarge):
		return winnodev1.ReasonAnswerTooLarge
	case errors.As(err, &unreachable):
		return winnodev1.ReasonUnreachable
	}
	return def
}
