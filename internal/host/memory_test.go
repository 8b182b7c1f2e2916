package host

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// operatorMemoryRequest is the memory the operator's Deployment requests
// (config/manager/manager.yaml); its limit is four times as much.
const operatorMemoryRequest = 128 << 20

// Ten hosts answering as much as the operator reads (DefaultMaxOutput)
// hold at most ten such answers in the operator's heap, a fraction of
// what its Deployment requests; hosts that never stop answering are cut
// off and leave nothing behind.
func TestTenMaximalAnswersStayWithinTheMemoryLimit(t *testing.T) {
	const hosts = 10
	clients := make([]*Client, hosts)
	for i := range clients {
		h := newSimHost(t)
		h.installFakeAgent(t)
		clients[i] = connect(t, h.options()) // MaxOutput: the default
	}
	ctx := context.Background()
	run := func(arg string) ([][]byte, []error) {
		outs, errs := make([][]byte, hosts), make([]error, hosts)
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Go(func() { outs[i], _, _, errs[i] = c.Run(ctx, []string{fakeAgentPath, "big", arg}, nil) })
		}
		wg.Wait()
		return outs, errs
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	outs, errs := run(strconv.Itoa(DefaultMaxOutput))
	runtime.GC()
	runtime.ReadMemStats(&after)
	for i := range outs {
		if errs[i] != nil || len(outs[i]) != DefaultMaxOutput {
			t.Fatalf("host %d: %d bytes, %v; want the maximal answer read whole", i, len(outs[i]), errs[i])
		}
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > operatorMemoryRequest/2 {
		t.Errorf("%d maximal answers hold %d MiB of heap; want under %d MiB (half the operator's memory request)", hosts, grew>>20, operatorMemoryRequest>>21)
	}
	runtime.KeepAlive(outs)

	_, errs = run("100000000000")
	for i, err := range errs {
		var oe *OutputTooLargeError
		if !errors.As(err, &oe) {
			t.Errorf("host %d answering without end: %v, want *OutputTooLargeError", i, err)
		}
	}
}
