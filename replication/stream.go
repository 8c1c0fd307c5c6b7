package replication

import (
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

// The Sink of a Stream is one value with three roles, each the methods one
// part of the stream uses. The iceberg package's Sink is all three (the
// bridge checks it at compile time). Methods are called from the goroutine
// that calls Next only.

// Applier takes whole source transactions, in commit order.
type Applier interface {
	Begin(xid uint32, commitLSN decode.LSN, commitTS time.Time)
	// Change applies a row change. c and its tuples' data are valid only
	// until Change returns: the sink copies what it keeps.
	Change(c *decode.Change) error
	Truncate(rels []*decode.Relation) error
	// Commit closes the open transaction, which ends at end. It returns
	// the tables the transaction leaves to copy: keyGained, tables without
	// a mirror it gave a key (see KeyGained); recopy, tables whose mirrors
	// the stream cannot make exact (see Recopy).
	Commit(ctx context.Context, end decode.LSN) (keyGained, recopy []uint32, err error)
}

// Tables follows the shape of the published tables.
type Tables interface {
	// Has reports whether the table is known (copied or being streamed).
	Has(relID uint32) bool
	// Relation applies a relation message of a known table. When the
	// mirror's schema changed, it returns the columns whose existing rows
	// may hold values no change event carries (see ColumnsAdded); nil when
	// it did not.
	Relation(ctx context.Context, rel *decode.Relation) (*decode.NewColumns, error)
	// DDL applies a captured DDL event (a logical message, see SetupSQL),
	// authenticated by the stream; it returns what Relation returns.
	DDL(ctx context.Context, ev *decode.DDLEvent) (*decode.NewColumns, error)
}

// Durability says what may be acknowledged, and flushes on time.
type Durability interface {
	// Tick flushes when the oldest pending change is old enough; called
	// between transactions.
	Tick(ctx context.Context, now time.Time) error
	// Durable is the LSN up to which every transaction is committed.
	Durable() decode.LSN
	// Idle reports that nothing is pending and no transaction is open.
	Idle() bool
}

// Sink is what a Stream feeds.
type Sink interface {
	Applier
	Tables
	Durability
}

// DDLKeys reads the key DDL events are signed with (see LoadDDLKey;
// Source implements it).
type DDLKeys interface {
	LoadDDLKey(ctx context.Context) ([]byte, error)
}

// StreamConfig configures a Stream.
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
	// ReceiveTimeout bounds the server's silence (default
	// DefaultReceiveTimeout): after half of it with nothing received,
	// a standby status asks the server for a reply; without one within
	// the other half the connection is taken as lost (a half-open
	// connection: a peer gone without a FIN, a path that drops packets).
	// It is checked when a read finds nothing until its deadline (the next
	// tick or status), so messages waiting in the socket always count.
	ReceiveTimeout time.Duration
	// SpoolDir holds streamed in-progress transactions (default: temp dir).
	SpoolDir string
	// Progress, when set, is updated with the stream's position.
	Progress *Progress
	// DDLKeys reads the key DDL events are signed with. Without it, or
	// while it fails, DDL events are ignored.
	DDLKeys DDLKeys
}

// Stream is one replication session: START_REPLICATION on a replication
// connection, read by Next until it returns nil or an error. Close it
// after.
type Stream struct {
	cfg      StreamConfig
	conn     *pgconn.PgConn
	sink     Sink
	log      *slog.Logger
	dec      decode.Decoder
	spool    *spool
	progress *Progress
	auth     ddlAuth

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
	ddlWarned   bool              // an ignored DDL event of the open transaction was logged

	// The receive loop's clock (see receive): the socket's read deadline,
	// when the next standby status and tick are due, the time last read,
	// and the changes handled since.
	readDeadline, nextStatus, nextTick, now time.Time
	stale                                   int
	// lastRecv is when a message was last received, pinged when a reply
	// was asked for since (zero: none asked); see checkSilence.
	lastRecv, pinged time.Time

	// events are what Next returns before it goes on; after is what is
	// left of the message whose event Next returned (see NewTable), run
	// when Next is called again; replay is the committed streamed
	// transaction being applied from its spool.
	events []Event
	last   Event // the event Next returned last, see Handled
	after  func(ctx context.Context) error
	replay *replay
}

// StartStream runs START_REPLICATION on conn. The stream then feeds the
// sink as Next is called.
func StartStream(ctx context.Context, conn *pgconn.PgConn, cfg StreamConfig, sink Sink, log *slog.Logger) (*Stream, error) {
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = 10 * time.Second
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = time.Second
	}
	if cfg.ReceiveTimeout <= 0 {
		cfg.ReceiveTimeout = DefaultReceiveTimeout
	}
	sp, err := newSpool(cfg.SpoolDir)
	if err != nil {
		return nil, err
	}
	if sp.stale > 0 {
		log.Info("stale spool directories removed", "count", sp.stale, "dir", filepath.Dir(sp.dir))
	}
	s := &Stream{cfg: cfg, conn: conn, sink: sink, log: log, spool: sp, progress: cfg.Progress, skipped: make(map[uint32]string), lastRecv: time.Now()}
	if cfg.DDLKeys != nil {
		s.auth.load = cfg.DDLKeys.LoadDDLKey
	}
	if spec, ok := sink.(Speculator); ok {
		s.spec = &specState{sink: spec, dec: decode.Decoder{Transient: true}, subs: make(map[uint32]bool)}
		// A speculation lives as long as the spool that backs it.
		spec.SpecAbandon("the replication connection restarted")
	}
	// Each message is applied before the next is received or replayed, and
	// the sink copies what it keeps of a change (see Applier.Change):
	// changes may alias the receive buffer.
	s.dec.Transient = true
	if s.progress == nil {
		s.progress = &Progress{}
	}
	opts := pglogrepl.StartReplicationOptions{PluginArgs: PluginArgs(cfg.Publication)}
	if err := pglogrepl.StartReplication(ctx, conn, cfg.Slot, cfg.Start, opts); err != nil {
		s.release()
		return nil, startError(cfg.Slot, err)
	}
	storeMax(&s.progress.acked, cfg.Start) // what the slot has confirmed
	s.progress.SetPhase(PhaseStreaming, "")
	log.Info("streaming", "slot", cfg.Slot, "publication", cfg.Publication, "from", cfg.Start)
	s.startDDLAuth(ctx)
	s.now = time.Now()
	s.nextStatus, s.nextTick = s.now.Add(cfg.StatusInterval), s.now.Add(cfg.TickInterval)
	return s, nil
}

// Close ends the session's local state: the spool, and a transaction the
// sink applied ahead. The connection stays open (the caller's).
func (s *Stream) Close() {
	_ = s.conn.Conn().SetReadDeadline(time.Time{})
	s.release()
}

func (s *Stream) release() {
	if s.spec != nil {
		s.spec.sink.SpecAbandon("the replication stream stopped")
	}
	s.spool.close()
}

// Next runs the stream until something needs the caller, and returns it:
// the caller handles the event (see Event), then calls Next again, which
// goes on where the stream stopped. Next returns nil when ctx is done and
// the stream stopped between transactions, leaving the sink's whole
// transactions for the caller to flush. After an error the sink may hold
// part of a transaction and must not be flushed.
func (s *Stream) Next(ctx context.Context) (Event, error) {
	// A flush, once started, finishes even when ctx is cancelled (SIGTERM):
	// the sink gets a context that is never cancelled.
	sinkCtx := context.WithoutCancel(ctx)
	for {
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events = append(s.events[:0], s.events[1:]...)
			s.last = ev
			return ev, nil
		}
		var err error
		switch {
		case s.after != nil:
			after := s.after
			s.after = nil
			err = after(sinkCtx)
		case s.replay != nil:
			err = s.replayNext(sinkCtx)
		default:
			var stopped bool
			if stopped, err = s.receive(ctx, sinkCtx); stopped {
				return nil, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// clockEvery: reading the clock costs about as much as decoding a change,
// so after a change it is read only every clockEvery messages. Anything
// else (a commit may flush for seconds), a receive timeout and a passed
// read deadline (which the next socket read reports as a timeout) read it.
const clockEvery = 32

// receive is one turn of the receive loop: a tick and a standby status
// when due, then one message received and applied. It reports stopped when
// ctx is done between transactions.
func (s *Stream) receive(ctx, sinkCtx context.Context) (stopped bool, err error) {
	if s.stale == 0 {
		s.now = time.Now()
	}
	if !s.now.Before(s.nextTick) {
		s.nextTick = s.now.Add(s.cfg.TickInterval)
		if !s.inTx {
			if err := s.sink.Tick(sinkCtx, s.now); err != nil {
				return false, err
			}
		}
		if s.sink.Durable() > s.acked {
			s.nextStatus = s.now // acknowledge new commits promptly
		}
	}
	if !s.now.Before(s.nextStatus) {
		if err := s.sendStatus(sinkCtx); err != nil {
			return false, err
		}
		s.nextStatus = s.now.Add(s.cfg.StatusInterval)
	}
	if ctx.Err() != nil && !s.inTx {
		// Stop only between transactions, so the caller can flush.
		return true, nil
	}
	deadline := s.nextTick
	if s.nextStatus.Before(deadline) {
		deadline = s.nextStatus
	}
	// While stopping, finish the open transaction: receive without ctx.
	// The deadline goes on the socket, and only when it changes: with a
	// context deadline, pgconn registers a context.AfterFunc (ctxwatch)
	// on every call, a dozen allocations per message.
	if !deadline.Equal(s.readDeadline) {
		if err := s.conn.Conn().SetReadDeadline(deadline); err != nil {
			return false, &ConnError{Op: "set read deadline", Err: err}
		}
		s.readDeadline = deadline
	}
	raw, err := s.conn.ReceiveMessage(context.Background())
	s.stale = (s.stale + 1) % clockEvery
	if err != nil {
		if pgconn.Timeout(err) {
			// Nothing to read until the deadline: is the server silent?
			s.stale, s.now = 0, time.Now()
			return false, s.checkSilence(sinkCtx)
		}
		return false, &ConnError{Op: "receive replication message", Err: err}
	}
	s.lastRecv, s.pinged = s.now, time.Time{}
	switch m := raw.(type) {
	case *pgproto3.ErrorResponse:
		pgErr := pgconn.ErrorResponseToPgError(m)
		if strings.HasPrefix(pgErr.Code, "57") || strings.HasPrefix(pgErr.Code, "08") {
			// Terminated by an administrator, shutdown, connection failure.
			return false, &ConnError{Op: "replication stream", Err: pgErr}
		}
		return false, fmt.Errorf("replication stream: %w", pgErr)
	case *pgproto3.CopyData:
		if err := s.copyData(sinkCtx, m.Data); err != nil {
			return false, err
		}
		if !isChange(m.Data) {
			s.stale = 0
		}
	case *pgproto3.CopyDone, *pgproto3.CommandComplete:
		// The server ended the stream: a shutdown or restart (fast
		// shutdown ends walsenders cleanly). Reconnect, as for a drop.
		return false, &ConnError{Op: "replication stream", Err: fmt.Errorf("the server ended the stream (%T); it is shutting down or restarting", raw)}
	default:
		return false, fmt.Errorf("unexpected replication message %T", raw)
	}
	return false, nil
}

func (s *Stream) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return errors.New("empty replication message")
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("parse keepalive: %w", err)
		}
		s.serverWALEnd(k.ServerWALEnd)
		if k.ReplyRequested {
			s.nextStatus = time.Time{}
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("parse XLogData: %w", err)
		}
		s.serverWALEnd(x.ServerWALEnd)
		storeMax(&s.progress.received, x.WALStart+decode.LSN(len(x.WALData)))
		return s.message(ctx, x.WALData)
	}
	return nil
}

// serverWALEnd records the server's WAL end, from a keepalive or an
// XLogData header.
func (s *Stream) serverWALEnd(end decode.LSN) {
	if end > s.walEnd {
		s.walEnd = end
	}
	storeMax(&s.progress.walEnd, end)
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
func (s *Stream) message(ctx context.Context, data []byte) error {
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
