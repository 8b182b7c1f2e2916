//go:build !windows

package agent

import (
	"fmt"

	"github.com/winnode/winnode/internal/simscm"
)

// openNative: off Windows there is no native service manager; the agent
// runs there only on a simulated host.
func openNative() (Platform, error) {
	return nil, fmt.Errorf("this build of winnode-agent runs only on Windows or on a winsim simulated host (%s and %s set)", simscm.EnvSocket, simscm.EnvRoot)
}
