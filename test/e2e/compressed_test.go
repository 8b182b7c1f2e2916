package e2e

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winsim"
)

// checkCompressedTransfer checks that new hosts were configured with the
// payload's compressed copies: each host applied a plan that stages the
// compressible payload files encoded (so its agent decoded them), and the
// operator sent each host the agent as it is (nothing on a new host could
// decode it) and every other payload file compressed, once: the agent is
// not staged again. uploaded is what the operator sent them all.
func checkCompressedTransfer(t *testing.T, w *world, hosts []*winsim.Host, uploaded int64) {
	t.Helper()
	var size, encoded int64
	for _, f := range w.payload.Files {
		size += f.Size
		if f.Encoding != "" {
			encoded += f.Size
		}
	}
	if encoded == 0 {
		t.Fatalf("the simulated payload has no compressed copy: %+v", w.payload.Files)
	}
	var sent map[string]bool // the content hashes of the files a plan installs
	for _, h := range hosts {
		applied := appliedPlan(t, h)
		n := 0
		sent = map[string]bool{}
		for _, f := range applied.Files {
			sent[f.SHA256] = true
			if f.Encoding == plan.EncodingZstd {
				n++
			}
		}
		if applied.SchemaVersion != plan.SchemaVersionEncoded || n == 0 {
			t.Errorf("host %s applied a %s plan with %d encoded files: want the payload's files compressed", h.Hostname(), applied.SchemaVersion, n)
		}
	}
	// What a new host must be sent: the agent as it is, and each distinct
	// content its plan installs once, compressed where it has a copy (the
	// stand-ins of several programs are one binary; a program of another
	// network mode is not sent).
	want := int64(0)
	counted := map[string]bool{}
	for _, f := range w.payload.Files {
		switch {
		case f.Name == plan.PayloadAgent:
			want += f.Size
		case !sent[f.SHA256] || counted[f.SHA256]:
		case f.Encoding != "":
			want += f.EncodedSize
		default:
			want += f.Size
		}
		counted[f.SHA256] = true
	}
	perHost := uploaded / int64(len(hosts))
	t.Logf("the operator sent each new host %d bytes, %.3f of the payload's %d", perHost, float64(perHost)/float64(size), size)
	// Beyond the payload: generated files and the plan, a few KiB.
	if perHost < want || perHost > want+1<<20 {
		t.Errorf("the operator sent each new host %d bytes: want the agent as it is and the other files compressed, %d bytes and a few KiB of generated files", perHost, want)
	}
}

// appliedPlan is the plan the agent on h last applied, from its state file.
func appliedPlan(t *testing.T, h *winsim.Host) *plan.Plan {
	t.Helper()
	local, err := h.Path(agent.StateDir.Join("state.json").String())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatalf("host %s: the agent's state: %v", h.Hostname(), err)
	}
	var st struct {
		Applied *plan.Plan `json:"applied"`
	}
	if err := json.Unmarshal(data, &st); err != nil || st.Applied == nil {
		t.Fatalf("host %s: the agent's state has no applied plan (%v)", h.Hostname(), err)
	}
	return st.Applied
}
