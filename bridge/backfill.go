package bridge

import (
	"context"
	"fmt"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// Backfill copies one published table (schema.table) again, replacing its
// mirror's rows in one snapshot, while no bridge runs (pg2iceberg backfill):
// it takes the lease, checks the slot exists and the table is current in
// the catalog, copies it and saves its key index. It starts no goroutine
// beyond the copy's workers and the writer lease's. It always copies, and
// a stale table stops it (SkipCopy and RecopyStale are run's). The sink gets only the source
// identity: no batch limits (a copy commits on its own), no rules.
func Backfill(ctx context.Context, cfg Config, table string) error {
	cfg.SkipCopy, cfg.RecopyStale = false, false
	b := newBridge(cfg, nil)
	// Before anything is created (the slot, the catalog file).
	if err := iceberg.CheckWarehouse(ctx, cfg.Catalog, true); err != nil {
		return err
	}
	src, err := replication.OpenSource(ctx, cfg.sourceConfig())
	if err != nil {
		return err
	}
	b.src = src
	defer src.Close()
	if err := src.Lease(ctx); err != nil {
		return fmt.Errorf("stop the running bridge before a backfill: %w", err)
	}
	release, err := b.holdWriterLease(ctx)
	if err != nil {
		return err
	}
	defer release()
	info, err := replication.LookupSlot(ctx, src.Conn(), cfg.Slot)
	if err != nil {
		return fmt.Errorf("slot %s: %w: run the bridge once first", cfg.Slot, err)
	}
	rels, held, err := replication.PreflightStart(ctx, src.Conn(), cfg.Publication, cfg.Rules, true, b.log)
	if err != nil {
		return fmt.Errorf("preflight failed:\n%w", err)
	}
	var rel *decode.Relation
	for _, r := range rels {
		if r.QualifiedName() == table {
			rel = r
		}
	}
	for _, u := range held {
		if u.Table == table {
			return fmt.Errorf("preflight failed:\n%w", u.Err)
		}
	}
	if rel == nil {
		return fmt.Errorf("table %s is not in publication %s", table, cfg.Publication)
	}
	sys, err := identify(ctx, cfg.Source)
	if err != nil {
		return err
	}
	cat, err := iceberg.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return err
	}
	defer closeCatalog(cat, b.log)
	b.sink = iceberg.NewSink(cat, iceberg.Config{Source: b.sourceID(sys)}, b.log)
	if err := b.openTables(ctx, rels, nil); err != nil {
		return err
	}
	attnums, err := src.AttNums(ctx, rel.ID)
	if err != nil {
		return err
	}
	// A key column renamed without the DDL capture is renamed in Iceberg
	// before the table is opened (see iceberg.Sink.FollowKeyRenames).
	if err := b.sink.FollowKeyRenames(ctx, rel, attnums); err != nil {
		return err
	}
	if err := b.addTable(ctx, rel); err != nil {
		return err
	}
	if _, err := b.staleTables(ctx, rels, info.ConfirmedFlush); err != nil {
		return err
	}
	if !rel.HasKey() {
		return b.alignKeyless(ctx, rel, attnums)
	}
	if err := b.copyTable(ctx, rel, nil, 0); err != nil {
		return err
	}
	return b.sink.SaveIndexes()
}

// identify reads the source's identity on a replication connection of its
// own, closed after.
func identify(ctx context.Context, source string) (replication.System, error) {
	repl, err := replication.ConnectReplication(ctx, source)
	if err != nil {
		return replication.System{}, err
	}
	defer repl.Close(context.Background())
	return replication.Identify(ctx, repl)
}
