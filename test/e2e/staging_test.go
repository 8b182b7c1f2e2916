package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// A staged blob whose content went bad between the sync and the apply
// (disk corruption, a tampered file; same size, so a sync takes it as
// staged) does not stall an upgrade: the agent refuses and deletes it, the
// operator's retry uploads it again, and the host converges to Ready with
// the right file in place.
func TestCorruptStagedBlobRecovers(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	op := w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "corrupted", h)
	w.waitReady(t, "corrupted", 3*time.Minute)
	op.stop()

	// The upgrade brings one new file; its blob is corrupted once, right
	// after the first sync staged it.
	const pad = 3 << 20
	dir := t.TempDir()
	m, err := simpayload.Build(dir, simpayload.Options{Cache: testenv.PayloadCache(t), AgentBinary: w.agent, ServiceBinary: w.service, StandinBinary: w.standin, PaddingBytes: pad, PaddingSeed: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	padding, ok := m.Lookup(simpayload.PaddingName)
	if !ok {
		t.Fatalf("the payload has no %s", simpayload.PaddingName)
	}
	want, err := os.ReadFile(filepath.Join(dir, simpayload.PaddingName))
	if err != nil {
		t.Fatal(err)
	}
	blob, err := h.Path(plan.DefaultStagingDir + `\` + padding.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var corrupted atomic.Bool
	op = w.startOperator(t, operatorOptions{payloadDir: dir, payload: m,
		afterStep: func(_ *operator, inst *winnodev1.WindowsInstance, step string) {
			// AfterStep hears of a step as it begins: StepApply comes
			// right after the sync, before the agent runs.
			if inst.Name != "corrupted" || step != configure.StepApply {
				return
			}
			once.Do(func() {
				data, err := os.ReadFile(blob)
				if err != nil {
					t.Errorf("the sync staged no blob for %s to corrupt: %v", simpayload.PaddingName, err)
					return
				}
				data[len(data)/2] ^= 0xff // same size, other content
				if err := os.WriteFile(blob, data, 0o644); err != nil {
					t.Errorf("corrupting the staged blob: %v", err)
					return
				}
				corrupted.Store(true)
				t.Logf("corrupted staged blob %s (%d bytes) before the apply", padding.SHA256, len(data))
			})
		}})

	testkit.Eventually(t, 3*time.Minute, "the host to run the new payload after the corrupted blob", func() (bool, string) {
		inst := w.get(t, "corrupted")
		return corrupted.Load() && inst.Status.Phase == winnodev1.PhaseReady && hostFileExists(t, h, simpayload.PaddingHostPath),
			fmt.Sprintf("corrupted %v phase %s step %s lastError %q", corrupted.Load(), inst.Status.Phase, inst.Status.Step, inst.Status.LastError)
	})
	inst := w.waitReady(t, "corrupted", time.Minute)
	w.checkNode(t, inst, h)
	local, err := h.Path(simpayload.PaddingHostPath)
	if err != nil {
		t.Fatal(err)
	}
	if installed, err := os.ReadFile(local); err != nil || !bytes.Equal(installed, want) {
		t.Errorf("%s on the host is not the payload's file (%v)", simpayload.PaddingHostPath, err)
	}
	// Uploaded twice: the agent deleted the bad blob, so the retry could
	// not take it for staged.
	if n := op.uploaded.Load(); n < 2*pad {
		t.Errorf("the upgrade uploaded %d bytes; want the %d-byte file twice", n, pad)
	}
	if _, err := os.Stat(blob); err == nil {
		t.Error("the blob is still in the staging folder after the apply")
	}
}
