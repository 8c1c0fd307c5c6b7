package replication

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Progress is the stream's position, readable from any goroutine (metrics,
// status endpoint) while Stream writes it.
type Progress struct {
	received atomic.Uint64 // end of the last WAL message received
	acked    atomic.Uint64 // last flush position sent to the server
	walEnd   atomic.Uint64 // the server's WAL end, from keepalives

	skipped    atomic.Int64               // changes and truncates of tables gone or no longer published
	ddlIgnored atomic.Int64               // DDL events not authenticated or malformed
	phase      atomic.Pointer[phaseState] // nil: starting
	lastStatus atomic.Int64               // unix nanoseconds of the last standby status sent
	attn       attention                  // tables that need a human
	reconnects atomic.Int64               // replication connections lost and opened again
}

// Reconnects counts the replication connections lost (each followed by a
// reconnect).
func (p *Progress) Reconnects() int64 { return p.reconnects.Load() }

// DDLIgnored counts the DDL events ignored: unsigned, badly signed or
// malformed.
func (p *Progress) DDLIgnored() int64 { return p.ddlIgnored.Load() }

// ChangesSkipped counts the changes (and truncates) skipped because their
// table is gone or no longer published.
func (p *Progress) ChangesSkipped() int64 { return p.skipped.Load() }

// Received is the end of the last WAL message received.
func (p *Progress) Received() decode.LSN { return decode.LSN(p.received.Load()) }

// Acked is the last flush position acknowledged to the server.
func (p *Progress) Acked() decode.LSN { return decode.LSN(p.acked.Load()) }

// ServerWALEnd is the server's WAL end as last reported.
func (p *Progress) ServerWALEnd() decode.LSN { return decode.LSN(p.walEnd.Load()) }

// LagBytes is how much WAL the server holds for this slot beyond what is
// acknowledged.
func (p *Progress) LagBytes() int64 {
	end, acked := p.ServerWALEnd(), p.Acked()
	if end < acked {
		return 0
	}
	return int64(end - acked)
}

func storeMax(a *atomic.Uint64, v decode.LSN) {
	for {
		old := a.Load()
		if uint64(v) <= old || a.CompareAndSwap(old, uint64(v)) {
			return
		}
	}
}

// Phase is what the bridge is doing, for its health (see Progress.Health).
type Phase int32

const (
	PhaseStarting     Phase = iota // preflight, opening tables, creating the slot
	PhaseCopying                   // copying tables before the stream starts
	PhaseStreaming                 // the replication stream runs
	PhaseReconnecting              // the replication connection was lost
	PhaseStopping                  // stopping after SIGINT or SIGTERM
	PhaseDiskFull                  // a local disk is full; retried once space is freed
)

// HealthStall is how long the stream may go without sending a standby
// status (every 10 s while it runs, also during a table sync) before it
// counts as stalled: long enough for a large flush.
const HealthStall = 2 * time.Minute

type phaseState struct {
	phase Phase
	since time.Time
	note  string
}

// SetPhase records what the bridge does from now on; note says more (the
// error of a lost connection, the tables being copied).
func (p *Progress) SetPhase(ph Phase, note string) {
	p.phase.Store(&phaseState{phase: ph, since: time.Now(), note: note})
	if ph == PhaseReconnecting {
		p.reconnects.Add(1)
	}
	if ph == PhaseStreaming {
		p.lastStatus.Store(time.Now().UnixNano())
	}
}

// Health reports whether the bridge works as it should at now: copying,
// or streaming with a standby status sent within HealthStall. reason says
// what it does, or why it is unhealthy, and names the tables that need a
// human (see NeedsHuman). Those leave the bridge healthy: it streams the
// other tables, and a restart (what a failing health check leads to) would
// stop at their preflight error and stream none.
func (p *Progress) Health(now time.Time) (ok bool, reason string) {
	st := p.phase.Load()
	if st == nil {
		st = &phaseState{phase: PhaseStarting}
	}
	with := func(s string) string {
		if st.note != "" {
			return s + ": " + st.note
		}
		return s
	}
	switch st.phase {
	case PhaseCopying:
		return true, with("copying") + p.attentionNote()
	case PhaseStreaming:
		last := time.Unix(0, p.lastStatus.Load())
		if idle := now.Sub(last); idle > HealthStall {
			return false, fmt.Sprintf("stalled: no standby status sent to PostgreSQL for %s (a flush, a table sync or the connection is stuck)", idle.Round(time.Second))
		}
		return true, fmt.Sprintf("streaming: acknowledged %s, last standby status %s ago", p.Acked(), now.Sub(last).Round(time.Second)) + p.attentionNote()
	case PhaseReconnecting:
		return false, with(fmt.Sprintf("replication connection lost %s ago, reconnecting", now.Sub(st.since).Round(time.Second)))
	case PhaseStopping:
		return false, "stopping"
	case PhaseDiskFull:
		return false, with(fmt.Sprintf("disk full for %s, needs a human: free space where the error says (the bridge retries by itself)", now.Sub(st.since).Round(time.Second)))
	}
	return false, with("starting")
}
