package winsim

import "sync/atomic"

// wireCounter counts the bytes a simulated host's SSH connections carry,
// as they cross the link (encrypted, with SSH's framing): what a real
// host's network adapter counts for them (Windows reports its adapters'
// totals with Get-NetAdapterStatistics, ReceivedBytes and SentBytes; here
// only the simulated SSH server's traffic exists).
type wireCounter struct {
	received, sent atomic.Int64
}

// WireBytes returns how many bytes the simulated host has received and
// sent on its SSH connections since it was created: what a transfer really
// cost on the link, for tests and benchmarks that compare byte counts.
func (h *Host) WireBytes() (received, sent int64) {
	return h.wire.received.Load(), h.wire.sent.Load()
}
