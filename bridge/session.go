package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// session runs one replication session from start until it stops (nil,
// ctx done) or fails, handling its events. An event is handled to its end
// even when ctx is done: it belongs to the open transaction, or follows
// its commit.
func (b *bridge) session(ctx context.Context, start decode.LSN) error {
	st, err := replication.StartStream(ctx, b.repl, replication.StreamConfig{
		Slot: b.cfg.Slot, Publication: b.cfg.Publication, Start: start, SpoolDir: b.cfg.SpoolDir, Progress: b.progress, DDLKeys: b.src,
		ReceiveTimeout: b.cfg.ReceiveTimeout,
	}, b.sink, b.log)
	if err != nil {
		return err
	}
	defer st.Close()
	hctx := context.WithoutCancel(ctx)
	keepalive := func() error { return st.Keepalive(hctx) }
	for {
		ev, err := st.Next(ctx)
		if err != nil || ev == nil {
			return err
		}
		if err := st.Handled(b.handle(hctx, ev, keepalive)); err != nil {
			return err
		}
	}
}

// handle does what an event of the stream asks; keepalive is called while
// it copies.
func (b *bridge) handle(ctx context.Context, ev replication.Event, keepalive func() error) error {
	if err := b.visible(ctx, eventXID(ev), keepalive); err != nil {
		return err
	}
	switch ev := ev.(type) {
	case replication.NewTable:
		return b.newTable(ctx, ev.Rel, keepalive)
	case replication.KeyGained:
		return b.keyGained(ctx, ev.RelID, keepalive)
	case replication.Recopy:
		return b.recopy(ctx, ev.RelID, keepalive)
	case replication.ColumnsAdded:
		return b.columnsAdded(ctx, ev.RelID, ev.Columns, keepalive)
	}
	return fmt.Errorf("unhandled replication event %T", ev)
}

// visible waits until transaction xid, which raised the event being
// handled, is visible to the SQL session: the walsender sends a
// transaction before other sessions see its commit, and a catalog lookup
// (LookupTable, AttNums, HasDefaults) would otherwise see the state before
// it and take a new table as gone (see replication.WaitVisible).
func (b *bridge) visible(ctx context.Context, xid uint32, keepalive func() error) error {
	return b.src.WaitVisible(ctx, xid, keepalive, b.log)
}

// eventXID is the transaction that raised ev (0, which waits for nothing,
// for an event without one).
func eventXID(ev replication.Event) uint32 {
	switch ev := ev.(type) {
	case replication.NewTable:
		return ev.XID
	case replication.KeyGained:
		return ev.XID
	case replication.Recopy:
		return ev.XID
	case replication.ColumnsAdded:
		return ev.XID
	}
	return 0
}

// newTable copies a table added to the publication while streaming. For
// one gone or no longer published (replication.ErrNotPublished), or that
// cannot be mirrored as it is (a replication.UnmirrorableError), the
// stream skips its changes (see replication.Stream.Handled).
func (b *bridge) newTable(ctx context.Context, rel *decode.Relation, keepalive func() error) error {
	full, err := b.src.LookupTable(ctx, rel.ID)
	if err != nil {
		return err
	}
	if err := b.addTable(ctx, full); err != nil {
		return err
	}
	return b.copyTable(ctx, full, keepalive, 0)
}

// keyGained makes the mirror of a table a DDL event gave a key, and
// copies the table into it.
func (b *bridge) keyGained(ctx context.Context, relID uint32, keepalive func() error) error {
	full, err := b.src.LookupTable(ctx, relID)
	if errors.Is(err, replication.ErrNotPublished) {
		b.log.Warn("table gained a key but is gone or no longer published: no mirror", "relid", relID)
		return nil
	}
	if err != nil {
		return err
	}
	if !full.HasKey() {
		b.log.Warn("table had a key for a while but has none now: no mirror", "table", full.QualifiedName())
		return nil
	}
	if err := b.sink.AddMirror(ctx, full); err != nil {
		return err
	}
	attnums, err := b.src.AttNums(ctx, relID)
	if err != nil {
		return err
	}
	if err := b.sink.InitAttNums(ctx, relID, attnums); err != nil {
		return err
	}
	return b.copyTable(ctx, full, keepalive, 0)
}

// recopy copies a table again whose mirror the stream cannot make exact.
func (b *bridge) recopy(ctx context.Context, relID uint32, keepalive func() error) error {
	full, err := b.src.LookupTable(ctx, relID)
	if err != nil {
		return err
	}
	if err := b.sink.MarkRecopy(ctx, relID, "rows with unknown values after a resumed copy"); err != nil {
		return err
	}
	return b.copyTable(ctx, full, keepalive, 0)
}

// needsCopy says whether a schema change left existing rows with values
// no change event carries (see columnsAdded).
func (b *bridge) needsCopy(ctx context.Context, relID uint32, cols decode.NewColumns) (bool, error) {
	if len(cols.Retyped) > 0 || len(cols.Dropped) > 0 {
		return true, nil
	}
	return b.src.HasDefaults(ctx, relID, cols.Added)
}

// columnsAdded copies a table again when existing rows hold values no
// change event carries: ADD COLUMN ... DEFAULT gives existing rows a
// value, a type change kept as a new column converted every row, and a
// column dropped from a mirror kept by the whole row changed every row's
// key. Otherwise it clears the re-copy mark the schema commit set.
func (b *bridge) columnsAdded(ctx context.Context, relID uint32, cols decode.NewColumns, keepalive func() error) error {
	need, err := b.needsCopy(ctx, relID, cols)
	if err != nil {
		return err
	}
	if !need {
		return b.sink.ClearRecopy(ctx, relID)
	}
	full, err := b.src.LookupTable(ctx, relID)
	if errors.Is(err, replication.ErrNotPublished) {
		b.log.Warn("column added with a default or retyped, but the table is gone or no longer published: not copied again", "relid", relID)
		return b.sink.ClearRecopy(ctx, relID)
	}
	if err != nil {
		return err
	}
	if len(cols.Dropped) > 0 {
		b.log.Info("column dropped from a mirror kept by the whole row: copying the table again to index its rows by their new values", "table", full.QualifiedName(), "dropped", cols.Dropped)
	} else {
		b.log.Info("column added with a default or retyped: copying the table again so existing rows show their values", "table", full.QualifiedName(), "added", cols.Added, "retyped", cols.Retyped)
	}
	reason := fmt.Sprintf("added %v, retyped %v, dropped %v", cols.Added, cols.Retyped, cols.Dropped)
	if err := b.sink.MarkRecopy(ctx, relID, reason); err != nil {
		return err
	}
	return b.copyTable(ctx, full, keepalive, 0)
}
