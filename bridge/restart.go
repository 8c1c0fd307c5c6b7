package bridge

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// serve runs attempts (see attempt) until one ends for good. A connection
// to the source lost at any point (the replication connection inside a
// transaction, the SQL session, a copy's connection; see
// replication.ConnLost) is survived in the process, as a restart would
// survive it: the sink is discarded with everything it holds that is not
// committed (nothing of it was acknowledged), the connections are opened
// again with backoff, and a new sink resumes from what is durable. A
// connection lost between transactions is cheaper: stream commits what
// arrived and resumes with the same sink. A slot invalidated meanwhile is
// copied again the same way, when --on-slot-lost=recopy says so.
func (b *bridge) serve(ctx context.Context, cat catalog.Catalog, sys replication.System, rels []*decode.Relation, held []*replication.UnmirrorableError) error {
	backoff := time.Second
	var diskWait time.Duration
	for {
		err := b.attempt(ctx, cat, sys, rels, held)
		if err == nil || ctx.Err() != nil {
			return err
		}
		full := diskFull(err)
		if !(full || replication.ConnLost(err) || b.recopyLostSlot(err)) {
			return err
		}
		diskWait = b.noteRestart(err, full, diskWait, backoff)
		b.sink.Discard()
		if full {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(diskWait):
			}
		}
		if err := b.reopen(ctx, &backoff); err != nil {
			return err
		}
		// The publication may have changed meanwhile: check it again.
		for {
			if rels, held, err = b.preflight(ctx); !replication.ConnLost(err) {
				break
			}
			if err := b.reopen(ctx, &backoff); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
	}
}

// noteRestart logs why serve starts another attempt and sets the phase;
// for a full disk it returns how long to wait before the next attempt
// (doubling while the disk stays full, at most a minute), otherwise 0.
func (b *bridge) noteRestart(err error, full bool, diskWait, backoff time.Duration) time.Duration {
	if full {
		diskWait = min(max(2*diskWait, 5*time.Second), time.Minute)
		b.log.Error("disk full: nothing after the durable position is acknowledged; free space where the error says, the bridge retries from the durable position by itself",
			"error", err, "durable", b.sink.Durable(), "next_attempt_in", diskWait)
		b.progress.SetPhase(replication.PhaseDiskFull, err.Error())
		return diskWait
	}
	msg := "connection lost; restarting from the durable position"
	if stale := (*iceberg.StaleIndexError)(nil); errors.As(err, &stale) {
		msg = "key index stale after an outside commit; restarting from the durable position"
	}
	b.log.Warn(msg, "error", err, "in_transaction", b.sink.InTransaction(), "durable", b.sink.Durable(), "backoff", backoff)
	b.progress.SetPhase(replication.PhaseReconnecting, err.Error())
	return 0
}

// diskFull reports whether err is a local disk or quota that is full: the
// spool directory, a local warehouse, the embedded catalog (SQLite says
// "database or disk is full"), the key index's disk tier. Such an error
// is survived in the process, as a lost connection is: what was not
// committed is discarded (nothing of it was acknowledged), and the next
// attempt starts from the durable position once space is freed. Some
// layers (the blob store, SQLite) do not wrap the errno, hence the text.
func diskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "no space left on device") || strings.Contains(s, "disk quota exceeded") ||
		strings.Contains(s, "database or disk is full")
}

// recopyLostSlot reports whether err is the slot invalidated while the
// bridge ran and --on-slot-lost=recopy is set: the next attempt finds it
// lost, drops it and copies every table again (see slotLost).
func (b *bridge) recopyLostSlot(err error) bool {
	var lost *replication.SlotLostError
	return errors.As(err, &lost) && b.cfg.RecopySlotLost
}

// reopen opens the replication connection and the SQL session again, with
// backoff between attempts, until both are open or ctx is done. The SQL
// session takes the lease again (see Source.Reopen): an error when
// another bridge took it meanwhile.
func (b *bridge) reopen(ctx context.Context, backoff *time.Duration) error {
	for {
		if err := b.reconnect(ctx, backoff); err != nil {
			return err
		}
		err := b.src.Reopen(ctx, b.log)
		if err == nil {
			return nil
		}
		if !replication.ConnLost(err) {
			return err
		}
		b.log.Warn("SQL connection not reopened; trying again", "error", err)
	}
}
