package payload_test

import (
	"testing"

	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// BenchmarkSimulatedPayloadCompression is BenchmarkBuiltPayloadCompression
// on the simulated payload: the agent's and the stand-ins' Linux builds,
// and 64 MiB of padding, which is random so that it does not compress (it
// travels as it is, and shows what trying costs).
func BenchmarkSimulatedPayloadCompression(b *testing.B) {
	hostLocal, err := testenv.HostLocal()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	m, err := simpayload.Build(dir, simpayload.Options{
		AgentBinary:     testenv.Binary(b, "cmd/winnode-agent"),
		ServiceBinary:   testenv.Binary(b, "cmd/winnode-service"),
		StandinBinary:   testenv.Binary(b, "cmd/winsim-standin"),
		HostLocalBinary: hostLocal,
		PaddingBytes:    64 << 20, PaddingSeed: "bench",
	})
	if err != nil {
		b.Fatal(err)
	}
	payload.MeasureCompression(b, dir, m.Files)
}
