package replication

import (
	"context"
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

func (s *Stream) sendStatus(ctx context.Context) error {
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
