//go:build !windows

package agent

import (
	"testing"

	"github.com/winnode/winnode/internal/winsim/scm"
)

func TestSimulatorEnvNamesMatchSCM(t *testing.T) {
	if EnvSimSocket != scm.EnvSocket || EnvSimRoot != scm.EnvRoot {
		t.Fatalf("agent reads %s/%s, the simulator sets %s/%s", EnvSimSocket, EnvSimRoot, scm.EnvSocket, scm.EnvRoot)
	}
}
