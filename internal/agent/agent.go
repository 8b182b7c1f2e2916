package agent

import (
	"log/slog"
	"time"

	"k8s.io/client-go/transport"

	"github.com/winnode/winnode/internal/plan"
)

// Agent carries out the agent's commands on one platform.
type Agent struct {
	Platform Platform
	// Log receives progress (stderr in winnode-agent); never secrets.
	Log *slog.Logger
	// OwnLog, when set, is where Log's lines are kept on the host too
	// (C:\var\log\winnode-agent), once the run knows it may write there
	// (ownlog.go). Log must write to it.
	OwnLog *OwnLog
	// Version is the agent's version, reported by Info.
	Version string
	// StartTimeout and StopTimeout bound the wait for one service to reach
	// Running or Stopped (defaults 2m and 1m); PollInterval is how often
	// its state is read (default 200ms).
	StartTimeout time.Duration
	StopTimeout  time.Duration
	PollInterval time.Duration
	// FileRetryTimeout bounds retries of deleting or replacing a file that
	// a just-stopped service still holds (default 15s).
	FileRetryTimeout time.Duration
	// Roots are the folders whose contents remove may delete on the word of
	// the agent's state (default plan.Roots, winnode's fixed folders). Tests
	// that install elsewhere name their folder here.
	Roots []string
	// Preflight, when set, makes Info run the host-side pre-flight checks
	// with what the operator handed (`info --preflight`: preflight.go).
	Preflight *plan.PreflightRequest
	// nodeTransport, when set, wraps the transport of every request made
	// with the node's credentials (nodeClient): tests count them.
	nodeTransport transport.WrapperFunc
}

// roots is a.Roots, or plan.Roots by default.
func (a *Agent) roots() []string {
	if a.Roots != nil {
		return a.Roots
	}
	return plan.Roots
}
