//go:build !windows

package agent

import (
	"fmt"
	"os"

	"github.com/winnode/winnode/internal/simscm"
)

// Open returns the simulated platform: off Windows the agent runs only on a
// winsim host, whose environment (simscm.EnvSocket, WINSIM_SCM, and
// simscm.EnvRoot) names its service control manager and its C:\ folder.
func Open() (Platform, error) {
	sock, root := os.Getenv(simscm.EnvSocket), os.Getenv(simscm.EnvRoot)
	switch {
	case sock == "" && root == "":
		return nil, fmt.Errorf("this build of winnode-agent runs only on a winsim simulated host (%s and %s set); on Windows run the Windows build", simscm.EnvSocket, simscm.EnvRoot)
	case sock == "" || root == "":
		return nil, fmt.Errorf("only one of %s and %s is set: a simulated host sets both", simscm.EnvSocket, simscm.EnvRoot)
	}
	return openSimulated(sock, root)
}
