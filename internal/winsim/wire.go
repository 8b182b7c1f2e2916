package winsim

// WireBytes returns how many bytes the simulated host has received and
// sent on its SSH connections (encrypted, with SSH's framing, as they cross
// the link) since it was created or since ResetCounters: what a real host's
// network adapter counts for them (Windows reports its adapters' totals
// with Get-NetAdapterStatistics, ReceivedBytes and SentBytes; here only the
// simulated SSH server's traffic exists). Counters has them too.
func (h *Host) WireBytes() (received, sent int64) {
	c := h.Counters()
	return c.BytesIn, c.BytesOut
}
