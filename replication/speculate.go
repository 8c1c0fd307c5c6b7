package replication

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Speculator is a Sink that can apply a streamed transaction ahead of its
// commit (see iceberg.Sink.SpecBegin): while it speculates, the stream
// still spools the transaction, and applies it from the spool at commit
// when the speculation was abandoned. A Stream speculates when its Sink is
// a Speculator.
type Speculator interface {
	SpecBegin(xid uint32) bool
	SpecRelation(rel *decode.Relation) bool
	// SpecChange applies a change; an error abandons the speculation.
	SpecChange(c *decode.Change) error
	Speculating() bool
	// SpecCommit makes the speculation the open transaction, to be
	// committed with Applier.Commit; false when it was abandoned.
	SpecCommit(ctx context.Context, xid uint32, commitLSN decode.LSN, commitTS time.Time) (bool, error)
	SpecAbandon(reason string)
}

// specState follows the streamed transaction the sink applies ahead.
type specState struct {
	sink Speculator
	xid  uint32
	// dec decodes the transaction's messages: its relation messages
	// describe the rows that follow in this transaction only, so they must
	// not reach the stream's decoder, which decodes other transactions.
	dec  decode.Decoder
	subs map[uint32]bool // subtransactions with changes applied
	// rels are the transaction's relation messages. Once a streamed
	// transaction commits, the server counts its relation messages as
	// received and does not send them again before the next change: the
	// stream's decoder must learn them, as a replay from the spool would.
	rels [][]byte
}

// streamStart opens a segment of a streamed transaction; at its first
// segment the sink may start applying it ahead.
func (s *Stream) streamStart(m *decode.StreamStart) {
	s.curXID = m.XID
	if m.First && s.spec != nil && !s.spec.sink.Speculating() && s.spec.sink.SpecBegin(m.XID) {
		s.spec.xid = m.XID
		s.spec.dec = decode.Decoder{Transient: true}
		clear(s.spec.subs)
		s.spec.rels = s.spec.rels[:0]
	}
}

// streamAbort drops a streamed transaction, or one of its subtransactions,
// from the spool and from the speculation.
func (s *Stream) streamAbort(m *decode.StreamAbort) {
	s.spool.abort(m.XID, m.SubXID)
	if s.speculating(m.XID) && (m.SubXID == m.XID || s.spec.subs[m.SubXID]) {
		s.spec.sink.SpecAbandon("the transaction or a subtransaction with changes rolled back")
	}
}

// speculating reports whether the sink applies streamed transaction xid
// ahead of its commit.
func (s *Stream) speculating(xid uint32) bool {
	return s.spec != nil && s.spec.xid == xid && s.spec.sink.Speculating()
}

// speculate hands a message of a streamed segment to the sink applying
// the transaction ahead, if it does; sub is the (sub)transaction the
// message belongs to. What the sink cannot take abandons the speculation,
// and the transaction is applied from the spool at commit.
func (s *Stream) speculate(sub uint32, data []byte) {
	if !s.speculating(s.curXID) {
		return
	}
	sp := s.spec
	switch data[0] {
	case 'I', 'U', 'D':
		if sub != sp.xid {
			sp.subs[sub] = true
		}
		msg, err := sp.dec.DecodeStreamed(data)
		if err != nil {
			sp.sink.SpecAbandon(err.Error())
			return
		}
		_ = sp.sink.SpecChange(msg.(*decode.Change)) // an error abandons it
	case 'R':
		msg, err := sp.dec.DecodeStreamed(data)
		if err != nil {
			sp.sink.SpecAbandon(err.Error())
			return
		}
		if sp.sink.SpecRelation(msg.(*decode.RelationMessage).Rel) {
			sp.rels = append(sp.rels, bytes.Clone(data))
		}
	case 'Y':
	default: // TRUNCATE, a logical message (DDL capture)
		sp.sink.SpecAbandon(fmt.Sprintf("a %q message in the transaction", data[0]))
	}
}

// specCommit commits a streamed transaction the sink applied ahead. done
// is false when the sink had abandoned it: the caller replays it from the
// spool.
func (s *Stream) specCommit(ctx context.Context, m *decode.StreamCommit) (done bool, err error) {
	s.inTx = true
	ok, err := s.spec.sink.SpecCommit(ctx, m.XID, m.CommitLSN, m.CommitTime)
	if err != nil {
		return true, err
	}
	s.inTx = false
	if !ok {
		return false, nil
	}
	if err := s.commit(ctx, m.EndLSN); err != nil {
		return true, err
	}
	s.spool.discard(m.XID)
	for _, data := range s.spec.rels {
		if _, err := s.dec.DecodeStreamed(data); err != nil {
			return true, err
		}
	}
	return true, nil
}
