package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// prepare brings the tables in line with the slot before the stream
// starts, and returns where it starts. With a slot, the tables are checked
// against it and the copies a stop interrupted run again (see catchUp);
// without one, the slot is created with an exported snapshot and every
// table copied in it.
func (b *bridge) prepare(ctx context.Context, rels []*decode.Relation) (decode.LSN, error) {
	info, err := replication.LookupSlot(ctx, b.src.Conn(), b.cfg.Slot)
	if errors.Is(err, replication.ErrNoSlot) {
		return b.createSlot(ctx, rels)
	}
	if err != nil {
		return 0, err
	}
	if info.Plugin != "pgoutput" {
		return 0, fmt.Errorf("slot %q uses plugin %q, not pgoutput: choose another --slot", b.cfg.Slot, info.Plugin)
	}
	if info.Lost() {
		return b.slotLost(ctx, rels, info)
	}
	// The stream resumes at the slot's confirmed position.
	return info.ConfirmedFlush, b.catchUp(ctx, rels, info.ConfirmedFlush)
}

// catchUp copies, each in a snapshot of its own (see SyncTable), the
// tables whose copy never completed (the bridge stopped during the initial
// copy, or they were added to the publication since): chunks an
// interrupted copy committed in a snapshot at or after confirmed are kept.
// Before anything is written, a table behind what the slot confirmed (a
// restored catalog) is never streamed into silently, nor one whose columns
// were renamed unseen.
func (b *bridge) catchUp(ctx context.Context, rels []*decode.Relation, confirmed decode.LSN) error {
	stale, err := b.staleTables(ctx, rels, confirmed)
	if err != nil {
		return err
	}
	_, notDone := b.sink.CopyState()
	if err := checkRenames(ctx, b.src.Conn(), b.sink, rels, slices.Concat(notDone, b.sink.RecopyPending(), stale)); err != nil {
		return err
	}
	for _, rel := range stale {
		if err := b.copyTable(ctx, rel, nil, 0); err != nil {
			return b.stoppedOr(ctx, err)
		}
	}
	if len(notDone) > 0 {
		b.progress.SetPhase(replication.PhaseCopying, "tables whose copy did not finish, before streaming")
	}
	for _, rel := range notDone {
		if err := b.copyTable(ctx, rel, nil, confirmed); err != nil {
			return b.stoppedOr(ctx, err)
		}
	}
	return b.resumeRecopies(ctx)
}

// resumeRecopies runs again the re-copies for column values a stop
// interrupted. A schema change's mark whose copy decision was not taken
// yet (a crash right after the schema commit) takes it now, as
// columnsAdded would have: a column added without a default needs no copy,
// and copying anyway would leave a resync row in the changelog for a
// change that never happened.
func (b *bridge) resumeRecopies(ctx context.Context) error {
	if err := b.sink.ResyncPending(ctx); err != nil {
		return err
	}
	for _, rel := range b.sink.RecopyPending() {
		if cols, ok := b.sink.RecopyCheck(rel.ID); ok {
			need, err := b.needsCopy(ctx, rel.ID, cols)
			if err != nil {
				return err
			}
			if !need {
				b.log.Info("an interrupted schema change needs no re-copy: the added columns have no default", "table", rel.QualifiedName(), "added", cols.Added)
				if err := b.sink.ClearRecopy(ctx, rel.ID); err != nil {
					return err
				}
				continue
			}
		}
		b.log.Info("an interrupted re-copy runs again", "table", rel.QualifiedName())
		if err := b.copyTable(ctx, rel, nil, 0); err != nil {
			return b.stoppedOr(ctx, err)
		}
	}
	return nil
}

// slotLost handles a slot the server invalidated: the changes after its
// confirmed position are gone from the WAL, so streaming on would lose
// them. It stops the start with what to do, or with RecopySlotLost drops
// the slot and creates it again, copying every table in its snapshot
// (each mirror's rows are replaced; the changelogs lack the changes in
// between).
func (b *bridge) slotLost(ctx context.Context, rels []*decode.Relation, info replication.SlotInfo) (decode.LSN, error) {
	if !b.cfg.RecopySlotLost {
		return 0, &replication.SlotLostError{Slot: b.cfg.Slot, Reason: info.LostReason(), From: info.ConfirmedFlush}
	}
	b.log.Warn("slot invalidated by the server: dropping it and copying every table again (--on-slot-lost=recopy); the changelogs lack the changes in between",
		"slot", b.cfg.Slot, "reason", info.LostReason(), "confirmed_flush_lsn", info.ConfirmedFlush, "tables", len(rels))
	if err := replication.DropSlot(ctx, b.src.Conn(), b.cfg.Slot); err != nil {
		return 0, err
	}
	return b.createSlot(ctx, rels)
}

// createSlot creates the slot and copies every table in its exported
// snapshot (or, with SkipCopy, marks them copied); the stream starts at its
// consistent point.
func (b *bridge) createSlot(ctx context.Context, rels []*decode.Relation) (decode.LSN, error) {
	ns, err := replication.CreateSlot(ctx, b.repl, b.cfg.Slot)
	if err != nil {
		return 0, err
	}
	b.log.Info("slot created", "slot", b.cfg.Slot, "consistent_point", ns.ConsistentPoint)
	b.progress.SetPhase(replication.PhaseCopying, "the initial copy, before streaming")
	if b.cfg.SkipCopy {
		for _, rel := range rels {
			if err := b.sink.FinishCopy(ctx, rel.ID, ns.ConsistentPoint); err != nil {
				return 0, err
			}
		}
	} else if err := replication.CopyTables(ctx, ns, rels, copySink{b.sink}, b.copyConfig(nil), b.log); err != nil {
		return 0, b.stoppedOr(ctx, err)
	}
	return ns.ConsistentPoint, nil
}

// stoppedOr turns an error caused by a requested stop (SIGINT, SIGTERM)
// during a copy into errStopped, a clean exit: the next start copies what
// is missing.
func (b *bridge) stoppedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		b.log.Warn("stopped during a copy; the next start copies the tables not yet complete", "error", err)
		return errStopped
	}
	return err
}
