package e2e

import (
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// A configured host whose agent state file was overwritten (damaged, or
// planted by someone who is not the agent) is upgraded without the agent
// trusting it: the agent sets it aside, installs the plan as on a new host,
// and the operator tells the administrator with an AgentWarning event.
func TestUntrustedAgentStateIsReported(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "planted", h)
	w.waitReady(t, "planted", 3*time.Minute)
	op.stop()

	state, err := h.Path(`C:\ProgramData\winnode\state.json`)
	if err != nil {
		t.Fatal(err)
	}
	planted := `{"schemaVersion":"winnode.io/v1","applied":{"version":"v0","services":[{"name":"sshd"}]},"stray":1}`
	if err := os.WriteFile(state, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	// A new payload makes the operator apply a new plan.
	dir := t.TempDir()
	m, err := simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t), AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, PaddingBytes: 1 << 10, PaddingSeed: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	w.startOperator(t, operatorOptions{payloadDir: dir, payload: m})
	w.waitEvents(t, metav1.NamespaceDefault, "planted", configure.ReasonAgentWarning)
	testkit.Eventually(t, 3*time.Minute, "the host to run the new payload", func() (bool, string) {
		return hostFileExists(t, h, simpayload.PaddingHostPath), "padding file not installed yet"
	})
	inst := w.waitReady(t, "planted", time.Minute)
	w.checkNode(t, inst, h)
	if _, err := os.Stat(state + ".rejected"); err != nil {
		t.Errorf("the untrusted state was not set aside as state.json.rejected: %v", err)
	}
}
