package replication

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Sink receives whole committed source transactions and says what is
// durable. Methods are called from Stream's goroutine only.
type Sink interface {
	// Has reports whether the table is known (copied or being streamed).
	Has(relID uint32) bool
	Relation(ctx context.Context, rel *decode.Relation) error
	// DDL applies a captured DDL event (a logical message, see SetupSQL),
	// authenticated by the stream.
	DDL(ctx context.Context, ev *decode.DDLEvent) error
	// TakeAdded returns the columns schema evolution just added or retyped,
	// by table.
	TakeAdded() map[uint32]decode.NewColumns
	// TakeKeyGained returns the tables without a mirror that the last
	// committed transaction gave a key (DDL capture).
	TakeKeyGained() []uint32
	// TakeRecopy returns the tables whose mirrors the stream cannot make
	// exact, as of the last committed transaction: they must be copied
	// again.
	TakeRecopy() []uint32
	Begin(xid uint32, commitLSN decode.LSN, commitTS time.Time)
	// Change applies a row change. c and its tuples' data are valid only
	// until Change returns: the sink copies what it keeps.
	Change(c *decode.Change) error
	Truncate(rels []*decode.Relation) error
	Commit(ctx context.Context, end decode.LSN) error
	Tick(ctx context.Context, now time.Time) error
	Flush(ctx context.Context) error
	Durable() decode.LSN
	Idle() bool
}

// Speculator is a Sink that can apply a streamed transaction ahead of its
// commit (see iceberg.Sink.SpecBegin): while it speculates, the stream
// still spools the transaction, and applies it from the spool at commit
// when the speculation was abandoned.
type Speculator interface {
	SpecBegin(xid uint32) bool
	SpecRelation(rel *decode.Relation) bool
	// SpecChange applies a change; an error abandons the speculation.
	SpecChange(c *decode.Change) error
	Speculating() bool
	SpecCommit(ctx context.Context, xid uint32, commitLSN, end decode.LSN, commitTS time.Time) (bool, error)
	SpecAbandon(reason string)
}

// StreamConfig configures Stream.
type StreamConfig struct {
	Slot        string
	Publication string
	// Start is where to start; 0 lets the server start at the slot's
	// confirmed flush position.
	Start decode.LSN
	// StatusInterval is how often a standby status is sent (default 10s).
	StatusInterval time.Duration
	// TickInterval is how often the sink's time-based flush is checked
	// (default 1s).
	TickInterval time.Duration
	// SpoolDir holds streamed in-progress transactions (default: temp dir).
	SpoolDir string
	// Progress, when set, is updated with the stream's position.
	Progress *Progress
	// OnNewTable is called for a table the sink does not know when the
	// stream first announces it (added to the publication while running).
	// It must copy the table into the sink (see SyncTable), calling
	// keepalive now and then. Without it a new table is an error.
	OnNewTable func(ctx context.Context, rel *decode.Relation, keepalive func() error) error
	// OnColumnsAdded is called when schema evolution added or retyped
	// columns of a table: existing rows may hold values for them (ADD COLUMN
	// ... DEFAULT, a type change's converted values) that no change event
	// carries, and the callback may copy the table again (see SyncTable).
	OnColumnsAdded func(ctx context.Context, relID uint32, cols decode.NewColumns, keepalive func() error) error
	// OnKeyGained is called after the commit of a transaction that gave a
	// table without a key one: the callback makes its mirror and copies the
	// table (see SyncTable). Without it the mirror waits for the next start.
	OnKeyGained func(ctx context.Context, relID uint32, keepalive func() error) error
	// LoadDDLKey reads the key DDL events are signed with (see LoadDDLKey).
	// Without it, or while it fails, DDL events are ignored.
	LoadDDLKey func(ctx context.Context) ([]byte, error)
	// OnRecopy is called after the commit of a transaction when a table's
	// mirror must be copied again (see Sink.TakeRecopy): the callback
	// copies it (see SyncTable). Without it the copy waits for the next
	// start.
	OnRecopy func(ctx context.Context, relID uint32, keepalive func() error) error
	// WaitVisible, when set, is called with the transaction's XID before
	// each of the callbacks above: it returns once the transaction is
	// visible to the connection the callbacks read the catalog with (see
	// WaitVisible), so they see what it did.
	WaitVisible func(ctx context.Context, xid uint32, keepalive func() error) error
}

// stream is the state of one replication session.
type stream struct {
	cfg     StreamConfig
	conn    *pgconn.PgConn
	sink    Sink
	log     *slog.Logger
	dec     decode.Decoder
	spool   *spool
	inTx    bool
	curXID  uint32 // top-level XID of the open streamed segment
	spec    *specState
	walEnd  decode.LSN
	acked   decode.LSN
	lastAck time.Time

	// txXID and txCommitLSN are the open transaction's top-level XID and
	// commit LSN.
	txXID       uint32
	txCommitLSN decode.LSN
	skipped     map[uint32]string // tables gone or no longer published, by relid: their changes are skipped
	auth        ddlAuth
	ddlWarned   bool // an ignored DDL event of the open transaction was logged

	progress *Progress
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

// Stream runs START_REPLICATION and feeds the sink until ctx is done or an
// error occurs. When ctx is done it returns nil at the next transaction
// boundary, leaving the sink's whole transactions for the caller to flush;
// on an error the sink may hold part of a transaction and must not be
// flushed.
func Stream(ctx context.Context, conn *pgconn.PgConn, cfg StreamConfig, sink Sink, log *slog.Logger) error {
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = 10 * time.Second
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = time.Second
	}
	sp, err := newSpool(cfg.SpoolDir)
	if err != nil {
		return err
	}
	if sp.stale > 0 {
		log.Info("stale spool directories removed", "count", sp.stale, "dir", filepath.Dir(sp.dir))
	}
	defer sp.close()
	s := &stream{cfg: cfg, conn: conn, sink: sink, log: log, spool: sp, progress: cfg.Progress, skipped: make(map[uint32]string),
		auth: ddlAuth{load: cfg.LoadDDLKey}}
	if spec, ok := sink.(Speculator); ok {
		s.spec = &specState{sink: spec, dec: decode.Decoder{Transient: true}, subs: make(map[uint32]bool)}
		// A speculation lives as long as the spool that backs it.
		spec.SpecAbandon("the replication connection restarted")
		defer spec.SpecAbandon("the replication stream stopped")
	}
	// Each message is applied before the next is received or replayed, and
	// the sink copies what it keeps of a change (see Sink.Change): changes
	// may alias the receive buffer.
	s.dec.Transient = true
	if s.progress == nil {
		s.progress = &Progress{}
	}
	opts := pglogrepl.StartReplicationOptions{PluginArgs: PluginArgs(cfg.Publication)}
	if err := pglogrepl.StartReplication(ctx, conn, cfg.Slot, cfg.Start, opts); err != nil {
		return startError(cfg.Slot, err)
	}
	storeMax(&s.progress.acked, cfg.Start) // what the slot has confirmed
	s.progress.SetPhase(PhaseStreaming, "")
	log.Info("streaming", "slot", cfg.Slot, "publication", cfg.Publication, "from", cfg.Start)
	s.startDDLAuth(ctx)
	return s.run(ctx)
}

func (s *stream) run(ctx context.Context) error {
	var readDeadline time.Time
	defer s.conn.Conn().SetReadDeadline(time.Time{})
	// A flush, once started, finishes even when ctx is cancelled (SIGTERM):
	// the sink gets a context that is never cancelled.
	sinkCtx := context.WithoutCancel(ctx)
	now := time.Now()
	nextStatus := now.Add(s.cfg.StatusInterval)
	nextTick := now.Add(s.cfg.TickInterval)
	// Reading the clock costs about as much as decoding a change: after a
	// change it is read only every clockEvery messages. Anything else (a
	// commit may flush for seconds), a receive timeout and a passed read
	// deadline (which the next socket read reports as a timeout) read it.
	const clockEvery = 32
	stale := 0 // changes handled since now was read
	for {
		if stale == 0 {
			now = time.Now()
		}
		if !now.Before(nextTick) {
			nextTick = now.Add(s.cfg.TickInterval)
			if !s.inTx {
				if err := s.sink.Tick(sinkCtx, now); err != nil {
					return err
				}
			}
			if s.sink.Durable() > s.acked {
				nextStatus = now // acknowledge new commits promptly
			}
		}
		if !now.Before(nextStatus) {
			if err := s.sendStatus(sinkCtx); err != nil {
				return err
			}
			nextStatus = now.Add(s.cfg.StatusInterval)
		}
		if ctx.Err() != nil && !s.inTx {
			// Stop only between transactions, so the caller can flush.
			return nil
		}
		deadline := nextTick
		if nextStatus.Before(deadline) {
			deadline = nextStatus
		}
		// While stopping, finish the open transaction: receive without ctx.
		// The deadline goes on the socket, and only when it changes: with a
		// context deadline, pgconn registers a context.AfterFunc (ctxwatch)
		// on every call, a dozen allocations per message.
		if !deadline.Equal(readDeadline) {
			if err := s.conn.Conn().SetReadDeadline(deadline); err != nil {
				return &ConnError{Op: "set read deadline", Err: err}
			}
			readDeadline = deadline
		}
		raw, err := s.conn.ReceiveMessage(context.Background())
		stale = (stale + 1) % clockEvery
		if err != nil {
			if pgconn.Timeout(err) {
				stale = 0
				continue
			}
			return &ConnError{Op: "receive replication message", Err: err}
		}
		switch m := raw.(type) {
		case *pgproto3.ErrorResponse:
			pgErr := pgconn.ErrorResponseToPgError(m)
			if strings.HasPrefix(pgErr.Code, "57") || strings.HasPrefix(pgErr.Code, "08") {
				// Terminated by an administrator, shutdown, connection failure.
				return &ConnError{Op: "replication stream", Err: pgErr}
			}
			return fmt.Errorf("replication stream: %w", pgErr)
		case *pgproto3.CopyData:
			if err := s.copyData(sinkCtx, m.Data, &nextStatus); err != nil {
				return err
			}
			if !isChange(m.Data) {
				stale = 0
			}
		case *pgproto3.CopyDone, *pgproto3.CommandComplete:
			// The server ended the stream: a shutdown or restart (fast
			// shutdown ends walsenders cleanly). Reconnect, as for a drop.
			return &ConnError{Op: "replication stream", Err: fmt.Errorf("the server ended the stream (%T); it is shutting down or restarting", raw)}
		default:
			return fmt.Errorf("unexpected replication message %T", raw)
		}
	}
}

func (s *stream) copyData(ctx context.Context, data []byte, nextStatus *time.Time) error {
	if len(data) == 0 {
		return errors.New("empty replication message")
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("parse keepalive: %w", err)
		}
		if k.ServerWALEnd > s.walEnd {
			s.walEnd = k.ServerWALEnd
		}
		storeMax(&s.progress.walEnd, k.ServerWALEnd)
		if k.ReplyRequested {
			*nextStatus = time.Time{}
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("parse XLogData: %w", err)
		}
		if x.ServerWALEnd > s.walEnd {
			s.walEnd = x.ServerWALEnd
		}
		storeMax(&s.progress.walEnd, x.ServerWALEnd)
		storeMax(&s.progress.received, x.WALStart+decode.LSN(len(x.WALData)))
		return s.message(ctx, x.WALData)
	}
	return nil
}

// isChange reports whether a CopyData payload is XLogData holding an
// Insert, Update or Delete.
func isChange(data []byte) bool {
	const hdr = 1 + 8 + 8 + 8 // 'w', WAL start, WAL end, send time
	if len(data) <= hdr || data[0] != pglogrepl.XLogDataByteID {
		return false
	}
	switch data[hdr] {
	case 'I', 'U', 'D':
		return true
	}
	return false
}

// message handles one pgoutput message in WAL order.
func (s *stream) message(ctx context.Context, data []byte) error {
	if s.dec.InStream() && len(data) >= 5 {
		switch data[0] {
		case 'I', 'U', 'D', 'T', 'M', 'R', 'Y':
			// Inside a streamed segment: keep for STREAM COMMIT. Relation and
			// type messages too: they describe the rows that follow them in
			// this transaction, which may differ from the cached shape.
			xid := binary.BigEndian.Uint32(data[1:5])
			if err := s.spool.add(s.curXID, xid, data); err != nil {
				return err
			}
			s.speculate(xid, data)
			return nil
		}
	}
	msg, err := s.dec.Decode(data)
	if err != nil {
		return err
	}
	return s.apply(ctx, msg)
}

func (s *stream) apply(ctx context.Context, msg decode.Message) error {
	switch m := msg.(type) {
	case *decode.Begin:
		s.begin(m.XID, m.FinalLSN, m.CommitTime)
	case *decode.Commit:
		s.inTx = false
		if err := s.sink.Commit(ctx, m.EndLSN); err != nil {
			return err
		}
		return s.keysGained(ctx)
	case *decode.RelationMessage:
		if skip, err := s.newTable(ctx, m.Rel); skip || err != nil {
			return err
		}
		if err := s.sink.Relation(ctx, m.Rel); err != nil {
			return err
		}
		return s.columnsAdded(ctx)
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
		s.curXID = m.XID
		if m.First && s.spec != nil && !s.spec.sink.Speculating() && s.spec.sink.SpecBegin(m.XID) {
			s.spec.xid = m.XID
			s.spec.dec = decode.Decoder{Transient: true}
			clear(s.spec.subs)
			s.spec.rels = s.spec.rels[:0]
		}
	case *decode.StreamStop:
	case *decode.StreamAbort:
		s.spool.abort(m.XID, m.SubXID)
		if s.speculating(m.XID) && (m.SubXID == m.XID || s.spec.subs[m.SubXID]) {
			s.spec.sink.SpecAbandon("the transaction or a subtransaction with changes rolled back")
		}
	case *decode.StreamCommit:
		if s.speculating(m.XID) {
			s.inTx = true
			ok, err := s.spec.sink.SpecCommit(ctx, m.XID, m.CommitLSN, m.EndLSN, m.CommitTime)
			if err != nil {
				return err
			}
			s.inTx = false
			if ok {
				s.spool.discard(m.XID)
				for _, data := range s.spec.rels {
					if _, err := s.dec.DecodeStreamed(data); err != nil {
						return err
					}
				}
				return s.keysGained(ctx)
			}
		}
		return s.replay(ctx, m)
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
func (s *stream) begin(xid uint32, commitLSN decode.LSN, commitTS time.Time) {
	s.inTx = true
	s.txXID, s.txCommitLSN, s.ddlWarned, s.auth.reloaded = xid, commitLSN, false, false
	s.sink.Begin(xid, commitLSN, commitTS)
}

// speculating reports whether the sink applies streamed transaction xid
// ahead of its commit.
func (s *stream) speculating(xid uint32) bool {
	return s.spec != nil && s.spec.xid == xid && s.spec.sink.Speculating()
}

// speculate hands a message of a streamed segment to the sink applying
// the transaction ahead, if it does; sub is the (sub)transaction the
// message belongs to. What the sink cannot take abandons the speculation,
// and the transaction is applied from the spool at commit.
func (s *stream) speculate(sub uint32, data []byte) {
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

// columnsAdded hands columns evolution added to OnColumnsAdded.
func (s *stream) columnsAdded(ctx context.Context) error {
	for relID, cols := range s.sink.TakeAdded() {
		if s.cfg.OnColumnsAdded == nil {
			continue
		}
		if err := s.visible(ctx); err != nil {
			return err
		}
		if err := s.cfg.OnColumnsAdded(ctx, relID, cols, func() error { return s.sendStatus(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

// replay feeds a committed streamed transaction to the sink as one whole
// transaction.
func (s *stream) replay(ctx context.Context, m *decode.StreamCommit) error {
	s.inTx = true
	var spooled int64
	if sf := s.spool.files[m.XID]; sf != nil {
		spooled = sf.bytes
	}
	s.log.Info("streamed transaction committed", "xid", m.XID, "spooled_bytes", spooled, "commit_lsn", m.CommitLSN)
	s.begin(m.XID, m.CommitLSN, m.CommitTime)
	err := s.spool.replay(m.XID, func(data []byte) error {
		msg, err := s.dec.DecodeStreamed(data)
		if err != nil {
			return err
		}
		return s.apply(ctx, msg)
	})
	if err != nil {
		return err
	}
	s.inTx = false
	if err := s.sink.Commit(ctx, m.EndLSN); err != nil {
		return err
	}
	return s.keysGained(ctx)
}

// visible waits until the open (or last committed) transaction is visible
// to the callbacks' catalog connection.
func (s *stream) visible(ctx context.Context) error {
	if s.cfg.WaitVisible == nil {
		return nil
	}
	return s.cfg.WaitVisible(ctx, s.txXID, func() error { return s.sendStatus(ctx) })
}

// keysGained hands tables the committed transaction gave a key to
// OnKeyGained, and tables to copy again to OnRecopy.
func (s *stream) keysGained(ctx context.Context) error {
	keepalive := func() error { return s.sendStatus(ctx) }
	keyGained := s.sink.TakeKeyGained()
	if len(keyGained) > 0 {
		if err := s.visible(ctx); err != nil {
			return err
		}
	}
	for _, relID := range keyGained {
		if s.cfg.OnKeyGained == nil {
			continue
		}
		err := s.cfg.OnKeyGained(ctx, relID, keepalive)
		if unmirrorable(err) {
			// Its changelog goes on; its mirror waits for the fix and the
			// next start.
			var u *UnmirrorableError
			name := fmt.Sprint(relID)
			if errors.As(err, &u) {
				name = u.Table
			}
			s.progress.NeedsHuman(relID, name, err.Error())
			s.log.Warn("table gained a key but cannot be mirrored: it keeps its changelog only", "table", name, "relid", relID, "problem", err)
			continue
		}
		if err != nil {
			return err
		}
	}
	recopy := s.sink.TakeRecopy()
	if len(recopy) > 0 {
		if err := s.visible(ctx); err != nil {
			return err
		}
	}
	for _, relID := range recopy {
		if s.cfg.OnRecopy == nil {
			continue
		}
		if err := s.cfg.OnRecopy(ctx, relID, keepalive); err != nil {
			return err
		}
	}
	return nil
}

// ackLSN is what may be acknowledged: the sink's durable LSN, or the
// server's WAL end when nothing is pending.
func (s *stream) ackLSN() decode.LSN {
	ack := s.sink.Durable()
	if !s.inTx && s.sink.Idle() && s.walEnd > ack {
		ack = s.walEnd
	}
	return max(ack, s.acked)
}

func (s *stream) sendStatus(ctx context.Context) error {
	ack := s.ackLSN()
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: ack,
		WALFlushPosition: ack,
		WALApplyPosition: ack,
	})
	if err != nil {
		return &ConnError{Op: "send standby status", Err: err}
	}
	if ack != s.acked {
		s.log.Debug("acknowledged", "lsn", ack)
	}
	s.acked = ack
	s.lastAck = time.Now()
	storeMax(&s.progress.acked, ack)
	s.progress.lastStatus.Store(s.lastAck.UnixNano())
	return nil
}

// FinalStatus sends one last standby status after the caller flushed.
func FinalStatus(ctx context.Context, conn *pgconn.PgConn, lsn decode.LSN) error {
	err := pglogrepl.SendStandbyStatusUpdate(ctx, conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: lsn, WALFlushPosition: lsn, WALApplyPosition: lsn,
	})
	if err != nil {
		return fmt.Errorf("send final standby status: %w", err)
	}
	return nil
}

// ConnError is a lost or broken replication connection: reconnecting and
// resuming from the durable LSN is safe when no transaction is half applied.
type ConnError struct {
	Op  string
	Err error
}

func (e *ConnError) Error() string   { return e.Op + ": " + e.Err.Error() }
func (e *ConnError) Unwrap() error   { return e.Err }
func (e *ConnError) Retryable() bool { return true }
