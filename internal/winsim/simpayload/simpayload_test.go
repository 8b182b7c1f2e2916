package simpayload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/winnode/winnode/internal/payload"
)

func fakeBinaries(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	agent, service, standin := filepath.Join(dir, "agent"), filepath.Join(dir, "service"), filepath.Join(dir, "standin")
	for file, content := range map[string]string{agent: "agent build", service: "winnode-service build", standin: "stand-in build"} {
		if err := os.WriteFile(file, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Options{AgentBinary: agent, ServiceBinary: service, StandinBinary: standin}
}

func TestBuildWritesALoadablePayload(t *testing.T) {
	o := fakeBinaries(t)
	dir := t.TempDir()
	m, err := Build(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := payload.Load(dir); err != nil {
		t.Fatalf("payload.Load refuses the simulated payload: %v", err)
	}
	for name, path := range map[string]string{"winnode-agent.exe": AgentHostPath, "winnode-service.exe": ServiceHostPath,
		"kubelet.exe": KubeletHostPath, "kube-proxy.exe": KubeProxyHostPath, "csi-proxy.exe": CSIProxyHostPath} {
		f, ok := m.Lookup(name)
		if !ok || f.HostPath != path {
			t.Errorf("%s: %+v, want it installed at %s", name, f, path)
		}
	}
	if f, _ := m.Lookup("winnode-agent.exe"); f.Version != "dev" {
		t.Errorf("agent version %q, want what an unstamped build reports, dev", f.Version)
	}
	if _, ok := m.Lookup(PaddingName); ok {
		t.Error("padding without PaddingBytes")
	}
	if _, ok := m.Lookup("hybrid-overlay-node.exe"); ok {
		t.Error("hybrid-overlay-node.exe without HybridOverlay: the real payload has it only when given as an input file")
	}
	o.HybridOverlay = true
	m, err = Build(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := m.Lookup("hybrid-overlay-node.exe"); !ok || f.HostPath != HybridOverlayHostPath {
		t.Errorf("with HybridOverlay: %+v, want hybrid-overlay-node.exe at %s", f, HybridOverlayHostPath)
	}
}

func TestPaddingSizeAndSeed(t *testing.T) {
	o := fakeBinaries(t)
	o.PaddingBytes = 3<<20 + 7
	o.PaddingSeed = "a"
	dir := t.TempDir()
	m1, err := Build(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	p1, ok := m1.Lookup(PaddingName)
	if !ok || p1.Size != o.PaddingBytes || p1.HostPath != PaddingHostPath {
		t.Fatalf("padding entry %+v, want %d bytes at %s", p1, o.PaddingBytes, PaddingHostPath)
	}
	again, err := Build(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := again.Lookup(PaddingName); p.SHA256 != p1.SHA256 {
		t.Error("same seed, different padding")
	}
	o.PaddingSeed = "b"
	m2, err := Build(dir, o) // rebuilt in place: an upgrade
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := m2.Lookup(PaddingName); p.SHA256 == p1.SHA256 {
		t.Error("another seed, same padding: an upgrade would move nothing")
	}
	o.PaddingBytes = 0
	m3, err := Build(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m3.Lookup(PaddingName); ok {
		t.Error("padding kept after it was turned off")
	}
	if _, err := os.Stat(filepath.Join(dir, PaddingName)); !os.IsNotExist(err) {
		t.Errorf("padding file left in the folder: %v", err)
	}
}

func TestBuildNeedsBothBinaries(t *testing.T) {
	if _, err := Build(t.TempDir(), Options{AgentBinary: "x"}); err == nil {
		t.Error("built without the stand-in")
	}
	o := fakeBinaries(t)
	o.StandinBinary = filepath.Join(t.TempDir(), "missing")
	if _, err := Build(t.TempDir(), o); err == nil {
		t.Error("built from a missing binary")
	}
}

// A real payload's files travel as they are, beside the stand-ins, where
// nothing runs them.
func TestCarryAddsTheRealPayloadsFiles(t *testing.T) {
	real := t.TempDir()
	if err := os.WriteFile(filepath.Join(real, "kubelet.exe"), []byte("MZ a Windows kubelet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := payload.Write(real, []payload.File{{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Version: "v1.37.1"}}); err != nil {
		t.Fatal(err)
	}
	o := fakeBinaries(t)
	o.Carry = real
	m, err := Build(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := m.Lookup(CarriedPrefix + "kubelet.exe")
	if !ok || f.HostPath != `C:\k\carried\kubelet.exe` || f.Size != int64(len("MZ a Windows kubelet")) {
		t.Fatalf("carried entry %+v, want the real kubelet.exe at C:\\k\\carried\\kubelet.exe", f)
	}
	if k, _ := m.Lookup("kubelet.exe"); k.HostPath != KubeletHostPath || k.Size == f.Size {
		t.Errorf("the stand-in kubelet.exe %+v was replaced by the carried one", k)
	}
	o.Carry = t.TempDir() // no manifest: refused, naming the folder
	if _, err := Build(t.TempDir(), o); err == nil || !strings.Contains(err.Error(), o.Carry) {
		t.Errorf("carrying a folder without a payload: %v, want an error naming it", err)
	}
}

// AgentBuild changes the agent alone, as an agent-only release does: the
// wrapper the services run keeps its bytes.
func TestAgentBuildChangesTheAgentAlone(t *testing.T) {
	o := fakeBinaries(t)
	before, err := Build(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.AgentBuild = "next"
	after, err := Build(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range before.Files {
		g, _ := after.Lookup(f.Name)
		if changed := g.SHA256 != f.SHA256; changed != (f.Name == "winnode-agent.exe") {
			t.Errorf("%s changed: %t, want only the agent changed", f.Name, changed)
		}
	}
}

// TestCacheReusesCompressedCopies: a Build with Options.Cache takes the
// compressed copy an earlier Build left there instead of compressing again
// (a copy planted in the cache, encoded at another zstd level, is the one
// the new folder ships); a damaged cache entry is compressed again, never
// shipped; and damaging a folder's copy leaves the cache's intact.
func TestCacheReusesCompressedCopies(t *testing.T) {
	o := fakeBinaries(t)
	content := []byte(strings.Repeat("agent build, compressible ", 4096))
	if err := os.WriteFile(o.AgentBinary, content, 0o755); err != nil {
		t.Fatal(err)
	}
	o.Cache = t.TempDir()
	first := agentEntry(t, t.TempDir(), o)
	if first.Encoding == "" {
		t.Fatal("the agent's content did not compress; the test needs a compressible one")
	}
	cached := filepath.Join(o.Cache, first.SHA256+".zst")

	planted := plantCopy(t, o.Cache, first, content)
	dir := t.TempDir()
	if got := agentEntry(t, dir, o); got.EncodedSHA256 != planted.EncodedSHA256 {
		t.Errorf("the second Build shipped a copy of sha256 %s, want the cache's %s", got.EncodedSHA256, planted.EncodedSHA256)
	}
	if err := os.WriteFile(filepath.Join(dir, first.EncodedName()), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(cached); string(data) == "damaged" {
		t.Error("damaging a folder's compressed copy damaged the cache's")
	}

	if err := os.WriteFile(cached, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if got := agentEntry(t, dir, o); got.EncodedSHA256 != first.EncodedSHA256 {
		t.Errorf("with a damaged cache entry the Build shipped a copy of sha256 %s, want a new compression (%s)", got.EncodedSHA256, first.EncodedSHA256)
	}
	if _, err := payload.Load(dir); err != nil {
		t.Errorf("the folder built past a damaged cache entry: %v", err)
	}
}

// agentEntry builds the payload into dir and returns the agent's entry.
func agentEntry(t *testing.T, dir string, o Options) payload.File {
	t.Helper()
	m, err := Build(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := m.Lookup("winnode-agent.exe")
	if !ok {
		t.Fatal("no winnode-agent.exe in the payload")
	}
	return f
}

// plantCopy replaces the cache's copy of f with content encoded at another
// zstd level (other bytes, the same content) and returns its entry.
func plantCopy(t *testing.T, cache string, f payload.File, content []byte) payload.File {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	encoded := enc.EncodeAll(content, nil)
	sum := sha256.Sum256(encoded)
	f.EncodedSHA256, f.EncodedSize = hex.EncodeToString(sum[:]), int64(len(encoded))
	if f.EncodedSHA256 == "" || bytes.Equal(encoded, mustRead(t, filepath.Join(cache, f.SHA256+".zst"))) {
		t.Fatal("the planted copy is the same as the cache's")
	}
	entry, err := json.Marshal(payload.File{SHA256: f.SHA256, Size: f.Size, Encoding: f.Encoding, EncodedSHA256: f.EncodedSHA256, EncodedSize: f.EncodedSize})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{f.SHA256 + ".zst": encoded, f.SHA256 + ".json": entry} {
		if err := os.WriteFile(filepath.Join(cache, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
