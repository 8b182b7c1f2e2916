// Package cmd_test checks the module as a whole: what each shipped binary
// links (deps_test.go: the simulator, the test control plane and the test
// framework are for tests and the demo, never for what runs on a real
// cluster or a real Windows host) and the house limit on function length
// (layout_test.go).
package cmd_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/winnode/winnode/"

// deps lists the packages the binary pkg links when built for goos.
func deps(t *testing.T, goos, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "./"+pkg)
	cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./%s (GOOS=%s): %v\n%s", pkg, goos, err, out)
	}
	return strings.Fields(string(out))
}

// forbidden reports whether dep is one of the packages (or under one of
// the folders) in banned.
func forbidden(dep string, banned []string) bool {
	for _, b := range banned {
		if dep == b || strings.HasPrefix(dep, b+"/") {
			return true
		}
	}
	return false
}

func TestShippedBinariesLinkNoTestCode(t *testing.T) {
	testOnly := []string{"testing", module + "internal/fixture", module + "internal/testkit"}
	simulator := []string{module + "internal/winsim", module + "internal/simscm", module + "internal/testenv"}
	for _, tc := range []struct {
		goos, pkg string
		banned    []string
	}{
		// The operator runs on a real cluster: no simulator, no test world.
		{"linux", "winnode-operator", append(testOnly, simulator...)},
		// The agent's Windows build runs on real hosts.
		{"windows", "winnode-agent", append(testOnly, simulator...)},
		// Its Linux build runs on simulated hosts: it speaks the simulated
		// service manager's API (simscm) but links none of the simulator.
		{"linux", "winnode-agent", append(testOnly, module+"internal/winsim", module+"internal/testenv")},
		// winnode-service.exe, the services' wrapper, is small: on Windows
		// neither the agent nor the plan's types (and their Kubernetes
		// libraries) are in it, so that its bytes change only with its own
		// code. Its Linux build speaks simscm, as the agent's does.
		{"windows", "winnode-service", append(append(testOnly, simulator...), module+"internal/agent", module+"internal/plan")},
		{"linux", "winnode-service", append(testOnly, module+"internal/winsim", module+"internal/testenv", module+"internal/agent")},
		// winnodectl links the simulator for its demo, on Linux only.
		{"linux", "winnodectl", testOnly},
		{"windows", "winnodectl", append(testOnly, simulator...)},
		{"linux", "winsim", testOnly},
		{"linux", "winsim-standin", testOnly},
	} {
		t.Run(tc.goos+"/"+tc.pkg, func(t *testing.T) {
			for _, dep := range deps(t, tc.goos, tc.pkg) {
				if forbidden(dep, tc.banned) {
					t.Errorf("%s (GOOS=%s) links %s", tc.pkg, tc.goos, dep)
				}
			}
		})
	}
}
