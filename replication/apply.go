package replication

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

func (s *Stream) apply(ctx context.Context, msg decode.Message) error {
	switch m := msg.(type) {
	case *decode.Begin:
		s.begin(m.XID, m.FinalLSN, m.CommitTime)
	case *decode.Commit:
		s.inTx = false
		return s.commit(ctx, m.EndLSN)
	case *decode.RelationMessage:
		return s.relation(ctx, m.Rel)
	case *decode.Change:
		if len(s.skipped) > 0 && s.skip(m.Rel.ID) {
			return nil
		}
		return s.sink.Change(m)
	case *decode.TruncateMessage:
		for _, rel := range m.Rels {
			s.skip(rel.ID) // counted; the sink leaves tables it does not know alone
		}
		return s.sink.Truncate(m.Rels)
	case *decode.StreamStart:
		s.streamStart(m)
	case *decode.StreamStop:
	case *decode.StreamAbort:
		s.streamAbort(m)
	case *decode.StreamCommit:
		if s.speculating(m.XID) {
			if done, err := s.specCommit(ctx, m); done || err != nil {
				return err
			}
		}
		return s.startReplay(m)
	case *decode.LogicalMessage:
		if m.Transactional && m.Prefix == DDLPrefix && s.inTx {
			return s.ddl(ctx, m)
		}
	case *decode.TypeMessage, *decode.Origin:
	default:
		return fmt.Errorf("unhandled message %T", msg)
	}
	return nil
}

// begin opens a transaction of top-level XID xid (whole, or a streamed one
// replayed at its commit).
func (s *Stream) begin(xid uint32, commitLSN decode.LSN, commitTS time.Time) {
	s.inTx = true
	s.txXID, s.txCommitLSN, s.ddlWarned, s.auth.reloaded = xid, commitLSN, false, false
	s.sink.Begin(xid, commitLSN, commitTS)
}

// commit commits the open transaction in the sink, and emits the copies it
// leaves to do.
func (s *Stream) commit(ctx context.Context, end decode.LSN) error {
	keyGained, recopy, err := s.sink.Commit(ctx, end)
	if err != nil {
		return err
	}
	s.committed(s.txXID, keyGained, recopy)
	return nil
}

// applyRelation hands a relation message of a known table to the sink.
func (s *Stream) applyRelation(ctx context.Context, rel *decode.Relation) error {
	cols, err := s.sink.Relation(ctx, rel)
	if err != nil {
		return err
	}
	s.columnsAdded(rel.ID, cols)
	return nil
}

// replay is a committed streamed transaction applied from its spool, a
// message per turn of Next (an event may stop it half way).
type replay struct {
	r   *spoolReader // nil: nothing was spooled
	xid uint32
	end decode.LSN
}

// startReplay opens a committed streamed transaction, to be fed to the
// sink from its spool as one whole transaction (see replayNext).
func (s *Stream) startReplay(m *decode.StreamCommit) error {
	s.inTx = true
	var spooled int64
	if sf := s.spool.files[m.XID]; sf != nil {
		spooled = sf.bytes
	}
	s.log.Info("streamed transaction committed", "xid", m.XID, "spooled_bytes", spooled, "commit_lsn", m.CommitLSN)
	s.begin(m.XID, m.CommitLSN, m.CommitTime)
	r, err := s.spool.reader(m.XID)
	if err != nil {
		return err
	}
	s.replay = &replay{r: r, xid: m.XID, end: m.EndLSN}
	return nil
}

// replayNext applies the next message of the transaction being replayed,
// or, after its last, removes its spool file and commits it.
func (s *Stream) replayNext(ctx context.Context) error {
	rp := s.replay
	data, err := rp.r.next()
	if err == io.EOF {
		s.replay = nil
		s.spool.discard(rp.xid)
		s.inTx = false
		return s.commit(ctx, rp.end)
	}
	if err != nil {
		return err
	}
	msg, err := s.dec.DecodeStreamed(data)
	if err != nil {
		return err
	}
	return s.apply(ctx, msg)
}
