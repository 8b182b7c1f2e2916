package configure

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/plan"
)

// EventReasonServiceNotRunning is the Warning event of a service of the
// host's applied plan that the agent found not Running, with the end of
// its log: why a Node went NotReady, for instance a kubelet whose command
// line was changed by hand refusing a flag. The apply that follows puts
// the plan's command line back.
const EventReasonServiceNotRunning = "ServiceNotRunning"

// reportServices records each service the agent's info found not Running
// on a host that was Ready.
func (c *Configurer) reportServices(inst *winnodev1.WindowsInstance, info *plan.Info) {
	for _, s := range info.Services {
		msg := fmt.Sprintf("service %s on %s is %s", s.Name, inst.Spec.Address, s.State)
		if len(s.LogTail) > 0 {
			msg += fmt.Sprintf("; the end of %s: %s", s.LogFile, strings.Join(s.LogTail, " | "))
		}
		c.evidence(inst, corev1.EventTypeWarning, EventReasonServiceNotRunning, truncate(msg, 1000))
	}
}
