package winsim

import "sync/atomic"

// Counters is what a simulated host's SSH server has seen since it started
// (or since ResetCounters): a benchmark's view of the cost of each thing
// winnode does to a host, as a packet capture on a real host would show it.
type Counters struct {
	// Connections is SSH connections whose handshake succeeded.
	Connections int64
	// Sessions is session channels opened (each exec or SFTP runs in one,
	// as on Windows OpenSSH).
	Sessions int64
	// Execs is programs run ("exec" requests accepted).
	Execs int64
	// SFTP is SFTP subsystems started.
	SFTP int64
	// BytesIn and BytesOut are bytes read from and written to the
	// network by the SSH server (encrypted, as they cross the link).
	BytesIn, BytesOut int64
}

// hostCounters holds the live counts.
type hostCounters struct {
	connections, sessions, execs, sftp, bytesIn, bytesOut atomic.Int64
}

// Counters returns the host's counts so far.
func (h *Host) Counters() Counters {
	c := &h.counters
	return Counters{
		Connections: c.connections.Load(),
		Sessions:    c.sessions.Load(),
		Execs:       c.execs.Load(),
		SFTP:        c.sftp.Load(),
		BytesIn:     c.bytesIn.Load(),
		BytesOut:    c.bytesOut.Load(),
	}
}

// ResetCounters sets every count back to zero.
func (h *Host) ResetCounters() {
	c := &h.counters
	for _, v := range []*atomic.Int64{&c.connections, &c.sessions, &c.execs, &c.sftp, &c.bytesIn, &c.bytesOut} {
		v.Store(0)
	}
}

// Sub is the counts between an earlier snapshot and this one.
func (c Counters) Sub(before Counters) Counters {
	return Counters{
		Connections: c.Connections - before.Connections,
		Sessions:    c.Sessions - before.Sessions,
		Execs:       c.Execs - before.Execs,
		SFTP:        c.SFTP - before.SFTP,
		BytesIn:     c.BytesIn - before.BytesIn,
		BytesOut:    c.BytesOut - before.BytesOut,
	}
}

// Add is the sum of two counts (e.g. over a fleet).
func (c Counters) Add(o Counters) Counters {
	return Counters{
		Connections: c.Connections + o.Connections,
		Sessions:    c.Sessions + o.Sessions,
		Execs:       c.Execs + o.Execs,
		SFTP:        c.SFTP + o.SFTP,
		BytesIn:     c.BytesIn + o.BytesIn,
		BytesOut:    c.BytesOut + o.BytesOut,
	}
}
