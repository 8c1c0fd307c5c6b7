package replication

import (
	"sync/atomic"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Progress is the stream's position, readable from any goroutine (metrics,
// status endpoint) while Stream writes it.
type Progress struct {
	received atomic.Uint64 // end of the last WAL message received
	acked    atomic.Uint64 // last flush position sent to the server
	walEnd   atomic.Uint64 // the server's WAL end, from keepalives

	skipped    atomic.Int64 // changes and truncates of tables gone or no longer published
	ddlIgnored atomic.Int64 // DDL events not authenticated or malformed
}

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
