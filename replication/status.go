package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Keepalive sends a standby status, acknowledging what is durable: the
// caller handling an event calls it every few seconds (a copy may take
// minutes), so the server does not time the connection out.
func (s *Stream) Keepalive(ctx context.Context) error { return s.sendStatus(ctx) }

// ackLSN is what may be acknowledged: the sink's durable LSN, or the
// server's WAL end when nothing is pending.
func (s *Stream) ackLSN() decode.LSN {
	ack := s.sink.Durable()
	if !s.inTx && s.sink.Idle() && s.walEnd > ack {
		ack = s.walEnd
	}
	return max(ack, s.acked)
}

func (s *Stream) sendStatus(ctx context.Context) error { return s.sendStatusReply(ctx, false) }

// sendStatusReply sends a standby status; with reply, it asks the server
// to answer it at once (with a keepalive).
func (s *Stream) sendStatusReply(ctx context.Context, reply bool) error {
	ack := s.ackLSN()
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: ack,
		WALFlushPosition: ack,
		WALApplyPosition: ack,
		ReplyRequested:   reply,
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

// DefaultReceiveTimeout is StreamConfig.ReceiveTimeout's default: the
// server's wal_sender_timeout default, the silence after which the server
// would give up on the bridge.
const DefaultReceiveTimeout = time.Minute

// ErrServerSilent is a replication connection on which the server sent
// nothing, not even the reply to a standby status that asked for one: the
// connection is half-open (the peer or the path is gone without a FIN or
// an RST) or the server hangs. It is a lost connection (see ConnLost).
var ErrServerSilent = errors.New("the server sent nothing, not even the reply to a keepalive that asked for one: the connection is half-open (the server or the network path is gone) or the server hangs")

// checkSilence turns a silent server into a lost connection: after half
// of ReceiveTimeout with nothing received it asks the server for a reply
// (a walsender answers at once, busy or not); when nothing came within the
// other half, it returns a ConnError wrapping ErrServerSilent. Asking
// first keeps a bridge that was busy (a copy, a long flush) from taking
// its own delay for the server's silence.
func (s *Stream) checkSilence(ctx context.Context) error {
	half := s.cfg.ReceiveTimeout / 2
	switch {
	case s.pinged.IsZero() && s.now.Sub(s.lastRecv) >= half:
		if err := s.sendStatusReply(ctx, true); err != nil {
			return err
		}
		s.pinged = s.now
	case !s.pinged.IsZero() && s.now.Sub(s.pinged) >= half:
		return &ConnError{Op: "receive replication message", Err: fmt.Errorf("%w (silent for %s; --receive-timeout %s)",
			ErrServerSilent, s.now.Sub(s.lastRecv).Round(time.Second), s.cfg.ReceiveTimeout)}
	}
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
