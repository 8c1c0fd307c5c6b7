package bridge

import (
	"context"
	"errors"
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
	for {
		err := b.attempt(ctx, cat, sys, rels, held)
		if err == nil || ctx.Err() != nil || !(replication.ConnLost(err) || b.recopyLostSlot(err)) {
			return err
		}
		msg := "connection lost; restarting from the durable position"
		if stale := (*iceberg.StaleIndexError)(nil); errors.As(err, &stale) {
			msg = "key index stale after an outside commit; restarting from the durable position"
		}
		b.log.Warn(msg, "error", err, "in_transaction", b.sink.InTransaction(), "durable", b.sink.Durable(), "backoff", backoff)
		b.progress.SetPhase(replication.PhaseReconnecting, err.Error())
		b.sink.Discard()
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
